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
    : slots_(capacity), gates_(new Gate[gates]), gateCount_(gates) {
  free_.reserve(capacity);
  for (uint32_t i = capacity; i-- > 0;) free_.push_back(i);
  byViewer_.reserve(capacity);
  byPeer_.reserve(capacity);
}

SessionTable::AddResult SessionTable::add(uint32_t viewer, const Endpoint& peer, const uint8_t* token, int64_t now) {
  std::lock_guard<std::mutex> lock(m_);
  if (byViewer_.count(viewer)) return AddResult::ViewerTaken;
  if (byPeer_.count(peer)) return AddResult::PeerTaken;
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
  byViewer_.emplace(viewer, slot);  // room reserved for capacity entries
  byPeer_.emplace(peer, slot);
  free_.pop_back();
  return AddResult::Added;
}

bool SessionTable::remove(uint32_t viewer) {
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = byViewer_.find(viewer);
    if (it == byViewer_.end()) return false;
    const uint32_t slot = it->second;
    Session& s = slots_[slot];
    byPeer_.erase(s.peer);
    byViewer_.erase(it);
    s.live = false;
    free_.push_back(slot);
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
    for (auto& [viewer, slot] : byViewer_) {
      slots_[slot].live = false;
      free_.push_back(slot);
    }
    byViewer_.clear();
    byPeer_.clear();
  }
  for (unsigned i = 0; i < gateCount_; ++i) {
    std::lock_guard<std::mutex> pass(gates_[i].m);
  }
}

uint32_t SessionTable::size() const {
  std::lock_guard<std::mutex> lock(m_);
  return uint32_t(byViewer_.size());
}

Session* SessionTable::findViewer(uint32_t viewer) {
  auto it = byViewer_.find(viewer);
  return it == byViewer_.end() ? nullptr : &slots_[it->second];
}

Session* SessionTable::findPeer(const Endpoint& peer) {
  auto it = byPeer_.find(peer);
  return it == byPeer_.end() ? nullptr : &slots_[it->second];
}

void SessionTable::times(int64_t now, std::vector<double>& out) const {
  std::lock_guard<std::mutex> lock(m_);
  for (const auto& [viewer, slot] : byViewer_) {
    const Session& s = slots_[slot];
    out.push_back(double(viewer));
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
