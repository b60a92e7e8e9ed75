// ClientSwarm: many light UDP clients in one process, for load tests on one machine (Linux,
// IPv4 loopback). Client i has its own source address, firstAddress + i (all of 127.0.0.0/8 is
// the loopback interface's), so a server sees a distinct peer per client; the clients of one
// receive thread share one socket bound to 0.0.0.0 and one port, and the thread tells them apart
// by each datagram's destination address (IP_PKTINFO). Their datagrams leave with that address as
// source (IP_PKTINFO on send).
//
// A connected client's game packets are handled here: the header is checked and decoded, the
// sequence tracked as ClientWorld tracks it (lib/net/client-world.ts: stale beyond 32 older than the
// newest, duplicates, reordering, a ring of the last 64), reliable events taken out once each, in
// order, and an ACK sent after every packet (in one sendmmsg per batch), as UdpClient does. Packets
// of clients marked as samples are handed to JavaScript whole (for a ClientWorld that keeps what
// the client believes); events of the others are handed over alone. Control messages (WELCOME,
// REFUSE, BYE, PING) go to JavaScript, which runs the handshake; JavaScript sends HELLO and BYE
// through send().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "udp_socket.h"

namespace sightline::net {

struct SwarmOptions {
  Endpoint server;            // IPv4; or later, aim()
  uint32_t clients = 0;
  uint32_t firstAddress = 0;  // host order: client i sends from firstAddress + i
  unsigned threads = 1;       // receive threads, one socket each; client i is thread i % threads's
  int recvBufferBytes = 0;    // 0: the kernel's default
  int sendBufferBytes = 0;
  size_t maxBatchBytes = size_t{16} << 20;
};

// A client's counts (also the order of counters()).
struct SwarmClientCounters {
  uint64_t datagrams = 0, bytes = 0, gamePackets = 0, applied = 0, duplicates = 0, stale = 0, malformed = 0;
  uint64_t reordered = 0, acksSent = 0, acksDropped = 0, events = 0, repeatedEvents = 0, skippedEvents = 0;
  uint64_t early = 0, newestTick = 0;
};
inline constexpr unsigned kSwarmCounterFields = 15;

class ClientSwarm {
 public:
  // The sequence window ClientWorld keeps by default (maxLateness) and its ring.
  static constexpr int32_t kMaxLateness = 32;
  static constexpr uint32_t kRing = 64;
  static constexpr unsigned kBatch = 64;
  static constexpr unsigned kDatagramBytes = 65536;  // the largest UDP payload, so nothing is cut
  static constexpr unsigned kNapMicros = 500;
  static constexpr unsigned kNapsBeforeBlocking = 200;
  // Batch records: u8 kind, u8 0, u16 0, u32 client, u32 length, then `length` bytes.
  //   kControl: a datagram that is not a game packet (or one before the client is connected).
  //   kPacket: a sample client's game packet.
  //   kEvent: a reliable event of a client that is not a sample: u16 sequence, then its bytes.
  static constexpr uint8_t kControl = 0, kPacket = 1, kEvent = 2;
  static constexpr size_t kRecordHeader = 12;

  // Opens the sockets. Throws CoreError ERR_SIGHTLINE_NET_BIND.
  ClientSwarm(const SwarmOptions& options, std::function<void()> notify);
  ~ClientSwarm() { stop(); }
  void start();
  void stop();  // joins the threads; idempotent

  uint32_t size() const { return uint32_t(clients_.size()); }
  Endpoint endpointOf(uint32_t client) const;
  // Ports of the threads' sockets; what the kernel granted the first one (bytes).
  std::vector<uint16_t> ports() const;
  int recvBuffer() const;
  int sendBuffer() const;

  // Where the clients send (an IPv4 address): before they connect, or between runs.
  void aim(const Endpoint& server);
  // A datagram from client `c` to the server: 0 or the errno.
  int send(uint32_t c, const uint8_t* data, size_t length);
  // Marks a client connected (its game packets handled here from now on) or not; sample: hand its
  // packets to JavaScript. Connecting starts its sequence tracking afresh (ClientWorld.reset).
  // token: the session's 8 bytes, which the client's ACKs carry.
  void setConnected(uint32_t c, bool connected, bool sample, const uint8_t* token);
  // Every client's counters, kSwarmCounterFields each, client after client.
  void counters(double* out) const;
  void takeBatch(std::vector<uint8_t>& out);
  uint64_t batchDropped() const { return batchDropped_.load(std::memory_order_relaxed); }
  // Datagrams to an address of no client of the thread that read them.
  uint64_t strays() const { return strays_.load(std::memory_order_relaxed); }

 private:
  struct Client {
    bool connected = false, sample = false;
    uint8_t token[8] = {0};
    int64_t newest = -1;  // extended sequence of the newest packet applied
    uint32_t newestTick = 0;
    int32_t nextEvent = -1;
    int64_t ring[kRing];
    SwarmClientCounters c;
  };
  struct Worker {
    UdpSocket socket;
    uint16_t port = 0;
    Endpoint server;  // under m
    std::mutex m;  // the clients of this worker, their counters
    std::thread thread;
  };
  void run(unsigned t);
  // Handles one datagram for client c (worker's lock held); true: send it an ACK.
  bool take(unsigned t, Client& client, uint32_t index, const uint8_t* data, size_t length);
  // A game packet applied to a connected client's sequence state (ClientWorld.receive's rules).
  void apply(unsigned t, Client& client, uint32_t index, const uint8_t* data, size_t length);
  // Adds a record to worker t's local batch: `a` then `b` as its bytes.
  void forward(unsigned t, uint8_t kind, uint32_t client, const uint8_t* a, size_t na, const uint8_t* b, size_t nb);
  void publish(unsigned t);
  static uint32_t ackBits(const Client& c);

  SwarmOptions opts_;
  std::vector<Client> clients_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::function<void()> notify_;
  std::atomic<bool> stop_{false};
  int wake_ = -1;
  std::mutex batchM_;
  std::vector<uint8_t> batch_;
  bool notified_ = false;
  std::atomic<uint64_t> batchDropped_{0}, strays_{0};
  // Per worker: records gathered while handling one batch (the worker's thread only).
  std::vector<std::vector<uint8_t>> local_;
  std::vector<std::vector<uint32_t>> dropped_;  // per worker: clients whose ACK the kernel refused
};

}  // namespace sightline::net
