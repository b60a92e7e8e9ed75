// SessionTable: the native data path's sessions, one per connected client: the viewer whose packets
// go to it, its address, and what the send and receive threads keep of it (newest sequence sent,
// ack credit, when it was last heard from and sent to).
//
// Threads: sessions are added and removed by one thread (the JavaScript thread); the pool's send
// threads and the receive thread find them by viewer or by address while holding the table's lock
// (short: one lookup batch at a time), then act on what they found (a sendmmsg) outside it. A
// thread acting outside the lock holds one of the table's gates from its lookups until its action
// is done, and remove() passes through every gate after taking the session out: so once remove()
// returns, no send to the removed client is in progress nor can start. The atomics of a session are
// written outside the lock (sequence, credit, times); the rest only under it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "endpoint.h"
#include "flat_index.h"

namespace sightline::net {

struct alignas(64) Session {
  uint32_t viewer = 0;
  bool live = false;
  Endpoint peer;
  uint8_t token[8] = {0};  // every client message of the session carries it at bytes 1..8
  // The server's acknowledgement of the client's reliable input, as game packets carry it in header
  // bytes 8..11: u16 ack | u16 ackBits << 16 (set by JavaScript, which receives the input).
  std::atomic<uint32_t> inputAck{0};
  // Sequence (u16) of the newest game packet sent; -1 before the first.
  std::atomic<int32_t> lastSequence{-1};
  // ACKs this client may still have passed on (wire.h: kAckCredit*).
  std::atomic<int32_t> ackCredit{0};
  // Monotonic milliseconds (monotonicMs) of the last well-formed message heard, and the last send.
  std::atomic<int64_t> heardAtMs{0};
  std::atomic<int64_t> sentAtMs{0};

  // After a game packet with sequence `seq` went out: newest sequence, credit, send time.
  void sentPacket(uint16_t seq, int64_t now);
};

// CLOCK_MONOTONIC, milliseconds.
int64_t monotonicMs();

class SessionTable {
 public:
  // capacity: most sessions at once. gates: threads that may act outside the lock at once (the
  // pool's threads and the receive thread), each naming its gate by index.
  SessionTable(uint32_t capacity, unsigned gates);

  enum class AddResult { Added, Full, ViewerTaken, PeerTaken };
  // Writer thread only. A session for `viewer` at `peer` with its 8-byte token, heard from and sent
  // to `now`.
  AddResult add(uint32_t viewer, const Endpoint& peer, const uint8_t* token, int64_t now);
  // Writer thread only. Takes the session out, then waits at each gate for the action in progress
  // there (at most one send batch): afterwards nothing is sent to it. False when there was none.
  bool remove(uint32_t viewer);
  // Writer thread only: every session out (close()).
  void clear();
  uint32_t size() const;
  uint32_t capacity() const { return uint32_t(slots_.size()); }

  // Under lock(): the session of a viewer or of an address, or null.
  std::mutex& mutex() const { return m_; }
  Session* findViewer(uint32_t viewer);
  Session* findPeer(const Endpoint& peer);
  // Held from a thread's lookups to the end of what it does with them.
  std::mutex& gate(unsigned i) { return gates_[i].m; }
  unsigned gates() const { return gateCount_; }

  // Every session's viewer and how long ago (ms) it was last heard from and sent to: three values a
  // session, appended to out, any order.
  void times(int64_t now, std::vector<double>& out) const;
  // Refreshes a session's heard and/or sent time; false when the viewer has none.
  bool touch(uint32_t viewer, bool heard, bool sent, int64_t now);
  // Sets the input acknowledgement its game packets carry from now on; false when none.
  bool setInputAck(uint32_t viewer, uint16_t ack, uint16_t ackBits);

 private:
  struct alignas(64) Gate {
    std::mutex m;
  };
  mutable std::mutex m_;
  std::vector<Session> slots_;
  std::vector<uint32_t> free_;
  // Live sessions by viewer and by peer address (flat_index.h: one probe run a lookup, no
  // allocation after construction).
  FlatIndex byViewer_;
  FlatIndex byPeer_;
  uint32_t live_ = 0;
  std::unique_ptr<Gate[]> gates_;
  unsigned gateCount_;
};

}  // namespace sightline::net
