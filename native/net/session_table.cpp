#include "session_table.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "wire.h"

namespace sightline::net {

int64_t monotonicMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

void Session::sentPacket(uint16_t seq, int64_t now) {
  lastSequence.store(seq, std::memory_order_relaxed);
  int32_t c = ackCredit.load(std::memory_order_relaxed);
  while (!ackCredit.compare_exchange_weak(c, std::min(kAckCreditMax, c + kAckCreditPerPacket), std::memory_order_relaxed)) {
  }
  sentAtMs.store(now, std::memory_order_relaxed);
}

SessionTable::SessionTable(uint32_t capacity, unsigned gates)
    : slots_(capacity), byViewer_(capacity), byPeer_(capacity), gates_(new Gate[gates]), gateCount_(gates) {
  free_.reserve(capacity);
  for (uint32_t i = capacity; i-- > 0;) free_.push_back(i);
}

namespace {
uint64_t viewerHash(uint32_t viewer) { return mixBits(viewer); }
}  // namespace

SessionTable::AddResult SessionTable::add(uint32_t viewer, const Endpoint& peer, const uint8_t* token, int64_t now) {
  std::lock_guard<std::mutex> lock(m_);
  if (findViewer(viewer)) return AddResult::ViewerTaken;
  if (findPeer(peer)) return AddResult::PeerTaken;
  if (free_.empty()) return AddResult::Full;
  const uint32_t slot = free_.back();
  Session& s = slots_[slot];
  s.viewer = viewer;
  s.peer = peer;
  s.live = true;
  std::memcpy(s.token, token, sizeof s.token);
  s.inputAck.store(0, std::memory_order_relaxed);
  s.lastSequence.store(-1, std::memory_order_relaxed);
  s.ackCredit.store(kAckCreditStart, std::memory_order_relaxed);
  s.heardAtMs.store(now, std::memory_order_relaxed);
  s.sentAtMs.store(now, std::memory_order_relaxed);
  byViewer_.insert(viewerHash(viewer), slot);  // room for capacity entries
  byPeer_.insert(peer.hash(), slot);
  free_.pop_back();
  ++live_;
  return AddResult::Added;
}

bool SessionTable::remove(uint32_t viewer) {
  {
    std::lock_guard<std::mutex> lock(m_);
    Session* found = findViewer(viewer);
    if (!found) return false;
    const uint32_t slot = uint32_t(found - slots_.data());
    byPeer_.erase(found->peer.hash(), slot);
    byViewer_.erase(viewerHash(viewer), slot);
    found->live = false;
    free_.push_back(slot);
    --live_;
  }
  // A thread that found the session before it was taken out still holds its gate: wait it out.
  // One that takes its gate after this finds the session gone.
  for (unsigned i = 0; i < gateCount_; ++i) {
    std::lock_guard<std::mutex> pass(gates_[i].m);
  }
  return true;
}

void SessionTable::clear() {
  {
    std::lock_guard<std::mutex> lock(m_);
    for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
      if (!slots_[slot].live) continue;
      slots_[slot].live = false;
      free_.push_back(slot);
    }
    byViewer_.clear();
    byPeer_.clear();
    live_ = 0;
  }
  for (unsigned i = 0; i < gateCount_; ++i) {
    std::lock_guard<std::mutex> pass(gates_[i].m);
  }
}

uint32_t SessionTable::size() const {
  std::lock_guard<std::mutex> lock(m_);
  return live_;
}

Session* SessionTable::findViewer(uint32_t viewer) {
  const int64_t slot = byViewer_.find(viewerHash(viewer), [&](uint32_t s) { return slots_[s].viewer == viewer; });
  return slot < 0 ? nullptr : &slots_[size_t(slot)];
}

Session* SessionTable::findPeer(const Endpoint& peer) {
  const int64_t slot = byPeer_.find(peer.hash(), [&](uint32_t s) { return slots_[s].peer == peer; });
  return slot < 0 ? nullptr : &slots_[size_t(slot)];
}

void SessionTable::times(int64_t now, std::vector<double>& out) const {
  std::lock_guard<std::mutex> lock(m_);
  for (const Session& s : slots_) {
    if (!s.live) continue;
    out.push_back(double(s.viewer));
    out.push_back(double(now - s.heardAtMs.load(std::memory_order_relaxed)));
    out.push_back(double(now - s.sentAtMs.load(std::memory_order_relaxed)));
  }
}

bool SessionTable::setInputAck(uint32_t viewer, uint16_t ack, uint16_t ackBits) {
  std::lock_guard<std::mutex> lock(m_);
  Session* s = findViewer(viewer);
  if (!s) return false;
  s->inputAck.store(uint32_t(ack) | (uint32_t(ackBits) << 16), std::memory_order_relaxed);
  return true;
}

bool SessionTable::touch(uint32_t viewer, bool heard, bool sent, int64_t now) {
  std::lock_guard<std::mutex> lock(m_);
  Session* s = findViewer(viewer);
  if (!s) return false;
  if (heard) s->heardAtMs.store(now, std::memory_order_relaxed);
  if (sent) s->sentAtMs.store(now, std::memory_order_relaxed);
  return true;
}

}  // namespace sightline::net
