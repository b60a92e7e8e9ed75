// Sender: a tick's game packets out of one UDP socket with sendmmsg, straight from the engine's
// output buffer (one iovec per packet, no copy), in batches of up to kBatch datagrams, from any
// number of threads at once (each with its own scratch and gate, named by its worker index).
//
// Each packet goes to the session of its viewer (SessionTable), looked up per batch; a viewer
// without one is unrouted. Header bytes 8..11 leave with the session's input acknowledgement
// (Session::inputAck) in place of the engine's zeros: the datagram is gathered from three pieces
// (bytes 0..7 and 12.. of the output buffer, the four bytes between from the batch's scratch), so
// the output buffer itself is never written. A datagram the kernel refuses for want of buffer (EAGAIN, ENOBUFS) is
// dropped; any other refusal is a failure (errno kept in lastError). Both are counted, and the
// rest of the batch is still tried: a client that cannot take a packet misses it, and the engine
// treats it as unsent.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "session_table.h"

namespace sightline::net {

struct SendCounters {
  uint64_t sent = 0, bytes = 0, dropped = 0, failed = 0, unrouted = 0;
  void add(const SendCounters& o) {
    sent += o.sent, bytes += o.bytes, dropped += o.dropped, failed += o.failed, unrouted += o.unrouted;
  }
};

class Sender {
 public:
  static constexpr unsigned kBatch = 64;
  // The most workers (gates): the pool's threads (at most 256), and kJsWorker, a send from the
  // JavaScript thread.
  static constexpr unsigned kMaxWorkers = 257;
  static constexpr unsigned kJsWorker = kMaxWorkers - 1;

  Sender(int fd, SessionTable& sessions) : fd_(fd), sessions_(sessions) {}

  // Scratch for workers [0, n) (n < kJsWorker), made before the threads use it (not while a send
  // runs); kJsWorker has its own.
  void reserveWorkers(unsigned n);
  // Packets [begin, end) of a tick's index (per viewer: avatar id, offset, length; length 0: none)
  // over `base`, as worker w (a reserved one or kJsWorker; its gate in the session table). Adds to
  // `out`.
  void sendRange(const uint8_t* base, const uint32_t* index, uint32_t begin, uint32_t end, unsigned w,
                 SendCounters& out);
  // One datagram to an address (control messages, the JavaScript thread). Returns 0 when the kernel
  // took it, else the errno (EAGAIN / ENOBUFS: no room now).
  int sendTo(const Endpoint& to, const uint8_t* data, size_t length);
  int lastError() const { return lastError_.load(std::memory_order_relaxed); }
  // Tests: called with the destinations of each sendmmsg the kernel took (inside the batch's gate,
  // right after the call). Set before any send starts.
  using Observer = std::function<void(const Endpoint* to, unsigned n)>;
  void setObserver(Observer o) { observer_ = std::move(o); }
  // Tests: the call that sends (sendmmsg's signature; ::sendmmsg unless replaced), to make the
  // kernel's refusals happen on demand. Set before any send starts.
  using SendCall = int (*)(int fd, mmsghdr* msgs, unsigned n, int flags);
  void setSendCall(SendCall call) { sendCall_ = call; }

 private:
  struct alignas(64) Scratch {
    mmsghdr msgs[kBatch];
    iovec iov[3 * kBatch];
    uint8_t stamp[kBatch][4];
    uint32_t length[kBatch];
    Endpoint to[kBatch];
    Session* session[kBatch];
    uint16_t sequence[kBatch];
  };
  // Sends msgs [0, m) of scratch s; counts them.
  void flush(Scratch& s, unsigned m, SendCounters& out);

  int fd_;
  SessionTable& sessions_;
  Scratch& scratch(unsigned w) { return w == kJsWorker ? *jsScratch_ : *scratch_[w]; }
  std::vector<std::unique_ptr<Scratch>> scratch_;
  std::unique_ptr<Scratch> jsScratch_ = std::make_unique<Scratch>();
  std::atomic<int> lastError_{0};
  Observer observer_;
  SendCall sendCall_ = &defaultSend;
  static int defaultSend(int fd, mmsghdr* msgs, unsigned n, int flags) { return ::sendmmsg(fd, msgs, n, flags); }
};

}  // namespace sightline::net
