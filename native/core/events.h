// Reliable events: a bounded, ordered queue per viewer of opaque byte strings (a death, a chat
// line) carried inside the event reserve of each packet and resent until a packet that carried them
// is acknowledged. Sequence numbers are per viewer, u16, consecutive; every packet carries the
// oldest unacknowledged events that fit, so the client delivers in order and drops repeats.
//
// Wire (docs/wire-format.md): header flag bit 0 set, then right after the header
//   u16 first event sequence, u8 count, then count x (u16 length, bytes).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace sightline {

constexpr uint32_t kEventSectionBytes = 3;  // u16 first sequence + u8 count
constexpr uint32_t kEventHeaderBytes = 2;   // u16 length per event
constexpr uint32_t kMaxQueuedEvents = 64;   // per viewer; one more is an overflow

class EventQueue {
 public:
  // maxEventBytes: the largest event, eventReserveBytes - section - per-event header.
  explicit EventQueue(uint32_t maxEventBytes)
      : maxEventBytes_(maxEventBytes), bytes_(size_t{kMaxQueuedEvents} * maxEventBytes) {}

  uint32_t size() const { return count_; }
  bool full() const { return count_ >= kMaxQueuedEvents; }
  uint32_t maxEventBytes() const { return maxEventBytes_; }
  uint16_t headSequence() const { return head_; }

  // The caller checks full() and the length first.
  void push(const uint8_t* data, uint32_t length) {
    uint32_t slot = uint16_t(head_ + count_) % kMaxQueuedEvents;
    std::memcpy(bytes_.data() + size_t{slot} * maxEventBytes_, data, length);
    lengths_[slot] = uint16_t(length);
    ++count_;
  }
  uint32_t lengthAt(uint32_t k) const { return lengths_[uint16_t(head_ + k) % kMaxQueuedEvents]; }
  const uint8_t* dataAt(uint32_t k) const {
    return bytes_.data() + size_t{uint16_t(head_ + k) % kMaxQueuedEvents} * maxEventBytes_;
  }

  // A packet carrying events [first, first + n) was acknowledged: those still queued are done.
  void acknowledge(uint16_t first, uint32_t n) {
    while (count_ > 0 && uint16_t(head_ - first) < n) ++head_, --count_;
  }

  uint64_t queued = 0, dropped = 0, acked = 0;

 private:
  uint32_t maxEventBytes_;
  std::vector<uint8_t> bytes_;
  uint16_t lengths_[kMaxQueuedEvents] = {};
  uint16_t head_ = 0;  // sequence of the oldest queued event
  uint32_t count_ = 0;
};

}  // namespace sightline
