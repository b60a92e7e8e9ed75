// Receiver: the data path's receive thread. It reads client datagrams with recvmmsg, up to kBatch a
// call, and sorts them with the checks of SessionHost.handle (docs/transport.md, "Native data
// path"): a session message (ACK, BYE, PING, INPUT) of the exact layout must come from a session's
// address (else a stray) and carry its token (else a bad token), both counted and dropped here;
// then
//   - ACK: not ahead of the newest sequence sent, ack credit (else counted and dropped), then
//     queued for the engine (takeAcks; while queueAcks is on), in arrival order;
//   - PING: refreshes the session's timeout, nothing else;
//   - BYE and INPUT: handed to JavaScript (takeBatch), which ends the session or takes the input;
//   - HELLO, and anything malformed, go to JavaScript too: the handshake and the decoder's error
//     codes are its own. Longer than any client message: malformed, counted here by the code the
//     decoder would give it (longCodes), never handed over.
// JavaScript is told through `notify` when its batch goes from empty to not empty, and takes the
// whole batch at once: one call per batch, not per datagram. The batch holds at most
// maxBatchBytes; datagrams beyond it are dropped and counted (batchDropped).
//
// Between bursts the thread sleeps for kNapMicros rather than blocking in the kernel, so a client
// sending ACKs rarely has to wake it (a wake-up costs the sender more than the datagram); after
// kNapsBeforeBlocking naps in a row with nothing read it blocks in poll() until a datagram or
// stop() comes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "session_table.h"
#include "wire.h"

namespace sightline::net {

// One acknowledgement for the engine (World::acknowledgeAll).
struct QueuedAck {
  uint32_t viewer;
  uint16_t ack;
  uint32_t ackBits;
};

struct ReceiveCounters {
  std::atomic<uint64_t> datagrams{0}, bytes{0}, malformed{0}, strays{0}, badAcks{0}, acks{0}, acksThrottled{0};
  // forwarded, forwardedBytes: datagrams (and their bytes) put in JavaScript's batch; batchDropped:
  // records that found it full.
  std::atomic<uint64_t> forwarded{0}, forwardedBytes{0}, batchDropped{0}, socketErrors{0}, pings{0}, badTokens{0};
  // Malformed datagrams longer than any client message, by LongCode (wire.h).
  std::atomic<uint64_t> longCodes[size_t(LongCode::Count)] = {};
};

class Receiver {
 public:
  static constexpr unsigned kBatch = 64;
  static constexpr unsigned kDatagramBytes = 2048;  // read buffer per datagram (> kMaxClientMessageBytes)
  static constexpr unsigned kNapMicros = 500;
  static constexpr unsigned kNapsBeforeBlocking = 200;

  // Batch records (little-endian), one after another:
  //   u8 kind, u8 addressLength, u16 port, u32 length, address text, then `length` bytes.
  // kind kDatagram: a datagram from address:port. kind kAck (forwardAcks only): an ACK queued for
  // the engine, address empty, port 0, 10 bytes: u32 viewer, u16 ack, u32 ackBits.
  static constexpr uint8_t kDatagram = 0, kAck = 1;
  static constexpr size_t kRecordHeader = 8;

  Receiver(int fd, SessionTable& sessions, bool forwardAcks, size_t maxBatchBytes, std::function<void()> notify);
  ~Receiver() { stop(); }
  void start();
  // Stops and joins the thread. Idempotent.
  void stop();

  // Whether ACKs are queued for the engine (a World is attached); off also empties the queue.
  void queueAcks(bool on);
  // The acknowledgements queued since the last call, in arrival order (out is swapped with the queue).
  void takeAcks(std::vector<QueuedAck>& out);
  // The batch for JavaScript since the last call (out is swapped with it; its old contents dropped).
  void takeBatch(std::vector<uint8_t>& out);
  const ReceiveCounters& counters() const { return counters_; }
  // One datagram sorted as the thread sorts it, as if it came from `from` (tests: a forged source
  // address). Any thread.
  void inject(const uint8_t* data, size_t length, const Endpoint& from);

 private:
  void run();
  // Sorts one datagram; the caller holds the session table's lock.
  void handle(const uint8_t* data, size_t length, const Endpoint& from, int64_t now);
  // Moves what handle() gathered into the queues JavaScript and the engine take from.
  void publish();
  void forward(uint8_t kind, const Endpoint* from, const uint8_t* data, size_t length);

  int fd_;
  SessionTable& sessions_;
  bool forwardAcks_;
  size_t maxBatchBytes_;
  std::function<void()> notify_;
  int wake_ = -1;  // eventfd: stop() rings it
  std::atomic<bool> stop_{false};
  std::atomic<bool> queueAcks_{false};
  std::thread thread_;
  ReceiveCounters counters_;
  // Held while sorting one batch (the thread's, or an injected datagram).
  std::mutex sortM_;
  // Filled while sorting one batch, then moved under the locks below.
  std::vector<QueuedAck> acksLocal_;
  std::vector<uint8_t> batchLocal_;
  std::mutex ackM_;
  std::vector<QueuedAck> acks_;
  std::mutex batchM_;
  std::vector<uint8_t> batch_;
  bool notified_ = false;  // batch_ not empty and JavaScript told (under batchM_)
};

}  // namespace sightline::net
