// DataPath: the native UDP data path of one server socket (Linux). It owns the socket (opened here
// or adopted), the sessions, the send path and the receive thread, and takes part in the ticks of
// the World it is attached to:
//   before the pass (applyAcks): the ACKs the receive thread queued since the last tick are applied
//     to the world, on the pool, with the effect World::acknowledge has;
//   after the pass (sendTick): the tick's packets go out on the pool's threads, with sendmmsg,
//     straight from the output buffer.
// Both run on the thread that runs the pass, never on the JavaScript thread. close() waits for a
// tick's part in progress, then joins the receive thread and closes the socket.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "receiver.h"
#include "sender.h"
#include "session_table.h"
#include "thread_pool.h"
#include "udp_socket.h"
#include "world.h"

namespace sightline::net {

struct DataPathOptions {
  Endpoint bind;          // used unless adoptFd >= 0
  int adoptFd = -1;       // a bound UDP socket to duplicate and use
  bool v6Only = false;
  int sendBufferBytes = 0;  // 0: the kernel's default
  int recvBufferBytes = 0;
  uint32_t maxSessions = 4096;
  bool forwardAcks = false;  // also hand each queued ACK to JavaScript (an onAck listener)
  size_t maxBatchBytes = size_t{4} << 20;
  bool dontFragment = true;  // UdpSocket::setDontFragment
};

// What one tick's part did, and how long it took (µs).
struct TickTransport {
  uint32_t tick = 0;
  SendCounters send;
  double sendMicros = 0;
  uint64_t acksApplied = 0, acksUnused = 0, acksInvalid = 0;
  double ackMicros = 0;
};

class DataPath {
 public:
  // Opens (or adopts) and configures the socket; the receive thread starts with start(). Throws
  // CoreError ERR_SIGHTLINE_NET_BIND.
  DataPath(const DataPathOptions& options, std::function<void()> notify);
  ~DataPath() { close(); }
  void start() { receiver_->start(); }
  // Idempotent. After it, ticks skip the data path and sends fail with EBADF.
  void close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  UdpSocket& socket() { return socket_; }
  SessionTable& sessions() { return sessions_; }
  Receiver& receiver() { return *receiver_; }
  Sender& sender() { return sender_; }
  int grantedSendBuffer() const { return grantedSend_; }
  int grantedRecvBuffer() const { return grantedRecv_; }

  // A World takes this path's ACKs (attached) or none does: the receive thread queues ACKs for the
  // engine only while one is attached.
  void setAttached(bool attached) { receiver_->queueAcks(attached); }
  // Scratch for a pool of `threads` (before the first tick with it; not while a tick runs).
  void reserveThreads(unsigned threads);
  // The tick's parts, on the thread running the pass (see the top of this file).
  void applyAcks(World& world, ThreadPool& pool);
  void sendTick(World& world, ThreadPool& pool);
  // The last tick's parts (read after the tick has ended).
  const TickTransport& lastTick() const { return last_; }

  // From the JavaScript thread, without the pool: a tick's packets, and one datagram. sendPackets
  // returns its counts (also added to the totals); sendTo returns 0 or the errno.
  SendCounters sendPackets(const uint8_t* base, const uint32_t* index, uint32_t count);
  int sendTo(const Endpoint& to, const uint8_t* data, size_t length);
  // A game packet of the caller's own to a viewer's session: 0 sent, ENOENT no session, else errno.
  int sendOne(uint32_t viewer, const uint8_t* data, size_t length);

  // Totals of every send (ticks, sendPackets, sendOne).
  struct Totals {
    std::atomic<uint64_t> sent{0}, bytes{0}, dropped{0}, failed{0}, unrouted{0};
    std::atomic<uint64_t> acksApplied{0}, acksUnused{0}, acksInvalid{0};
  };
  const Totals& totals() const { return totals_; }

 private:
  bool enter();
  void leave();
  void addTotals(const SendCounters& c);

  UdpSocket socket_;
  SessionTable sessions_;
  Sender sender_;
  std::unique_ptr<Receiver> receiver_;
  int grantedSend_ = 0, grantedRecv_ = 0;
  std::atomic<bool> closed_{false};
  std::mutex stateM_;
  std::condition_variable idle_;
  int inTick_ = 0;
  Totals totals_;
  TickTransport last_;
  struct alignas(64) WorkerCounters {
    SendCounters c;
  };
  std::vector<WorkerCounters> perWorker_;
  std::vector<QueuedAck> acks_;
  std::vector<World::AckInput> ackInputs_;
  std::vector<World::AckOutcome> ackOutcomes_;
};

}  // namespace sightline::net
