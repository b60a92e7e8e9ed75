// Over 500 lines as one file: the data path's checks, each a self-contained case against the obvious answer, sharing one set of loopback helpers.
// The native UDP data path under the sanitizers (net/): real loopback sockets, the pool's send
// threads, the receive thread, a client swarm. Each check compares with the obvious answer: the
// bytes of the engine's output, the order of the datagrams sent, a model of ClientWorld's
// sequence rules. Linked into build/sanitize and build/tsan (npm run test:sanitize, test:tsan).
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "check.h"
#include "config.h"
#include "data_path.h"
#include "errors.h"
#include "swarm.h"
#include "wire.h"
#include "world.h"

using namespace sightline;
using namespace sightline::net;

namespace {


Endpoint loopback(uint16_t port, const char* address = "127.0.0.1") {
  Endpoint e;
  Endpoint::parse(address, port, AF_INET, e);
  return e;
}

// A peer: a bound socket and its address.
struct Peer {
  UdpSocket socket = UdpSocket::open(loopback(0));
  Endpoint at = socket.local();
  Peer() { socket.setRecvBuffer(1 << 20); }
  // The next datagram within `ms`, or empty with ok false.
  bool next(std::vector<uint8_t>& out, int ms) {
    pollfd p{socket.fd(), POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return false;
    out.resize(65536);
    const ssize_t n = ::recv(socket.fd(), out.data(), out.size(), 0);
    if (n < 0) return false;
    out.resize(size_t(n));
    return true;
  }
  void send(const Endpoint& to, const uint8_t* b, size_t n) { ::sendto(socket.fd(), b, n, 0, &to.addr.sa, to.len); }
};

void token(uint32_t i, uint8_t* out) {
  for (int k = 0; k < 8; ++k) out[k] = uint8_t(i * 37 + k * 11 + 1);
}

// Every viewer with a session gets, each tick, exactly the bytes the engine wrote for it, with
// its input acknowledgement in header bytes 8..11; a viewer without one gets nothing.
void sendsEachViewersBytes(unsigned threads) {
  ConfigInput in;
  Config c = buildConfig(in);
  World w(c, 4096);
  std::mt19937 rng(threads);
  const int32_t mid = c.regionRaw / 2;
  std::vector<uint32_t> ids;
  for (int i = 0; i < 700; ++i) ids.push_back(w.entities().spawn(mid + int32_t(rng() % 200000), mid + int32_t(rng() % 200000), 0));
  constexpr unsigned kViewers = 24;
  std::vector<Peer> peers(kViewers);
  DataPathOptions o;
  o.bind = loopback(0);
  o.sendBufferBytes = 1 << 20;
  DataPath dp(o, nullptr);
  ThreadPool pool(threads);
  dp.reserveThreads(pool.size());
  std::map<uint32_t, uint32_t> inputAck;
  for (unsigned i = 0; i < kViewers + 1; ++i) {
    w.addViewer(ids[i], ViewerOptions{0, 1 + i % 2, true});
    if (i == kViewers) break;  // the last viewer has no session
    uint8_t t[8];
    token(i, t);
    CHECK(dp.sessions().add(ids[i], peers[i].at, t, monotonicMs()) == SessionTable::AddResult::Added, "add %u", i);
    const uint32_t a = rng();
    dp.sessions().setInputAck(ids[i], uint16_t(a), uint16_t(a >> 16));
    inputAck[ids[i]] = a;
  }
  uint64_t compared = 0, unrouted = 0;
  for (int tick = 0; tick < 12; ++tick) {
    for (uint32_t id : ids) w.entities().x()[slotOfId(id)] += int32_t(rng() % 3001) - 1500;
    w.prepareTick(pool.size());
    dp.applyAcks(w, pool);
    w.runPass(pool);
    dp.sendTick(w, pool);
    unrouted += dp.lastTick().send.unrouted;
    for (size_t v = 0; v < w.viewerCount(); ++v) {
      const Viewer& view = w.viewerAt(v);
      if (view.outLength == 0 || v == kViewers) continue;
      std::vector<uint8_t> want(w.output() + view.outOffset, w.output() + view.outOffset + view.outLength);
      const uint32_t a = inputAck[view.avatarId];
      setU16(want.data() + 8, uint16_t(a)), setU16(want.data() + 10, uint16_t(a >> 16));
      std::vector<uint8_t> got;
      CHECK(peers[v].next(got, 2000), "threads %u tick %d viewer %zu: no datagram", threads, tick, v);
      CHECK(got == want, "threads %u tick %d viewer %zu: %zu bytes received differ from the %zu the engine wrote", threads,
             tick, v, got.size(), want.size());
      ++compared;
    }
  }
  std::vector<uint8_t> extra;
  for (auto& p : peers) CHECK(!p.next(extra, 0), "a datagram beyond one a tick");
  CHECK(unrouted > 0, "the viewer without a session was never unrouted");
  CHECK(dp.totals().sent.load() == compared, "sent %llu, compared %llu", (unsigned long long)dp.totals().sent.load(),
         (unsigned long long)compared);
  std::printf("native send, %u threads: %llu packets byte for byte as the engine wrote them\n", threads,
              (unsigned long long)compared);
}

// Sessions removed while two threads send to them in batches: no batch that includes one ends
// after its removal returned (the observer runs inside the batch's gate, after the sendmmsg).
void removalIsFinalDuringSends() {
  constexpr unsigned kSessions = 64, kRemoved = 32;
  SessionTable table(kSessions, Sender::kMaxWorkers);
  UdpSocket sock = UdpSocket::open(loopback(0));
  sock.setSendBuffer(4 << 20);
  std::vector<Peer> peers(kSessions);
  std::map<uint16_t, unsigned> byPort;
  std::vector<uint8_t> out(kSessions * 64, 0);
  std::vector<uint32_t> index(3 * kSessions);
  for (unsigned i = 0; i < kSessions; ++i) {
    uint8_t t[8];
    token(i, t);
    table.add(1000 + i, peers[i].at, t, monotonicMs());
    byPort[peers[i].at.port()] = i;
    out[i * 64] = kGamePacketVersion;
    index[3 * i] = 1000 + i, index[3 * i + 1] = i * 64, index[3 * i + 2] = 64;
  }
  Sender sender(sock.fd(), table);
  sender.reserveWorkers(2);
  std::atomic<uint64_t> clock{1};
  std::vector<std::atomic<uint64_t>> lastSend(kSessions);
  sender.setObserver([&](const Endpoint* to, unsigned n) {
    for (unsigned k = 0; k < n; ++k) {
      const uint64_t now = clock.fetch_add(1);
      std::atomic<uint64_t>& last = lastSend[byPort.at(to[k].port())];
      uint64_t prev = last.load();
      while (prev < now && !last.compare_exchange_weak(prev, now)) {
      }
    }
  });
  std::atomic<bool> stop{false};
  std::vector<std::thread> senders;
  std::atomic<uint64_t> rounds{0};
  for (unsigned w = 0; w < 2; ++w)
    senders.emplace_back([&, w] {
      while (!stop.load()) {
        SendCounters c;
        sender.sendRange(out.data(), index.data(), 0, kSessions, w, c);
        rounds.fetch_add(1);
      }
    });
  std::vector<uint64_t> removedAt(kSessions, 0);
  std::mt19937 rng(5);
  std::vector<unsigned> order(kSessions);
  for (unsigned i = 0; i < kSessions; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (unsigned k = 0; k < kRemoved; ++k) {
    std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 800));
    const unsigned i = order[k];
    CHECK(table.remove(1000 + i), "remove %u", i);
    removedAt[i] = clock.fetch_add(1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.store(true);
  for (auto& t : senders) t.join();
  unsigned late = 0, sentAfter = 0;
  for (unsigned i = 0; i < kSessions; ++i) {
    if (removedAt[i] == 0) {
      sentAfter += lastSend[i].load() > removedAt[order[0]];
      continue;
    }
    if (lastSend[i].load() > removedAt[i]) ++late;
  }
  CHECK(late == 0, "%u removed sessions were sent to after their removal returned", late);
  CHECK(sentAfter > 0, "the sessions not removed stopped getting packets");
  std::printf("%u sessions removed during %llu rounds of sends: none sent to after its removal\n", kRemoved,
              (unsigned long long)rounds.load());
}

// The kernel's refusals: EAGAIN and ENOBUFS count as dropped, anything else as failed, and the
// rest of the batch is still sent (a fake sendmmsg refuses chosen datagrams, passes the others on).
std::set<unsigned> refuse;
std::atomic<unsigned> offered{0};
int refusingSend(int fd, mmsghdr* msgs, unsigned n, int flags) {
  for (unsigned k = 0; k < n; ++k) {
    const unsigned at = offered.fetch_add(1);
    if (refuse.count(at)) {
      errno = at % 3 == 0 ? EAGAIN : at % 3 == 1 ? ENOBUFS : EPERM;
      if (k > 0) {
        offered.fetch_sub(1);  // offered again by the next call, which starts at it
        return ::sendmmsg(fd, msgs, k, flags);
      }
      return -1;
    }
  }
  return ::sendmmsg(fd, msgs, n, flags);
}

void refusalsAreCountedAndTheRestSent() {
  constexpr unsigned kPackets = 150;
  SessionTable table(kPackets, Sender::kMaxWorkers);
  UdpSocket sock = UdpSocket::open(loopback(0));
  std::vector<uint8_t> out(kPackets * 32, 0);
  std::vector<uint32_t> index(3 * kPackets);
  for (unsigned i = 0; i < kPackets; ++i) {
    uint8_t t[8];
    token(i, t);
    table.add(500 + i, loopback(uint16_t(30000 + i), "127.0.4.1"), t, monotonicMs());
    out[i * 32] = kGamePacketVersion;
    index[3 * i] = 500 + i, index[3 * i + 1] = i * 32, index[3 * i + 2] = 32;
  }
  Sender sender(sock.fd(), table);
  sender.reserveWorkers(1);
  sender.setSendCall(&refusingSend);
  refuse = {0, 1, 2, 5, 63, 64, 65, 66, 100, 149};  // first, middle, batch edges (64 a batch), last
  offered = 0;
  SendCounters c;
  sender.sendRange(out.data(), index.data(), 0, kPackets, 0, c);
  unsigned dropped = 0, failed = 0;
  for (unsigned at : refuse) (at % 3 == 2 ? failed : dropped)++;
  CHECK(c.sent == kPackets - refuse.size() && c.dropped == dropped && c.failed == failed,
         "sent %llu dropped %llu failed %llu", (unsigned long long)c.sent, (unsigned long long)c.dropped, (unsigned long long)c.failed);
  CHECK(sender.lastError() == EPERM, "lastError %d", sender.lastError());
  // Every packet issued is noted in its session before it leaves, refused or not (a client may
  // acknowledge one while sendmmsg is still running).
  std::lock_guard<std::mutex> lock(table.mutex());
  for (uint32_t v : {500u, 503u})
    CHECK(table.findViewer(v)->lastSequence.load() == 0 && table.findViewer(v)->ackCredit.load() == kAckCreditStart + kAckCreditPerPacket,
           "packet of viewer %u not noted in its session", v);
  std::printf("refusals: %u dropped (EAGAIN, ENOBUFS) and %u failed counted, the other %llu sent\n", dropped, failed,
              (unsigned long long)c.sent);
}

// Records of a receiver's batch for JavaScript: (kind, address:port, bytes).
struct Record {
  uint8_t kind;
  std::string from;
  std::vector<uint8_t> bytes;
};
std::vector<Record> records(const std::vector<uint8_t>& b) {
  std::vector<Record> out;
  size_t at = 0;
  while (at + Receiver::kRecordHeader <= b.size()) {
    Record r;
    r.kind = b[at];
    const size_t alen = b[at + 1];
    const uint16_t port = getU16(b.data() + at + 2);
    const uint32_t len = getU32(b.data() + at + 4);
    r.from = std::string(reinterpret_cast<const char*>(b.data() + at + 8), alen) + ":" + std::to_string(port);
    const uint8_t* body = b.data() + at + 8 + alen;
    r.bytes.assign(body, body + len);
    out.push_back(r);
    at += 8 + alen + len;
  }
  return out;
}

std::vector<uint8_t> ackMsg(const uint8_t* tok, uint16_t ack, uint32_t bits) {
  std::vector<uint8_t> m(kAckBytes);
  m[0] = kMsgAck;
  std::memcpy(m.data() + 1, tok, 8);
  setU16(m.data() + 9, ack), setU32(m.data() + 11, bits);
  return m;
}

// Hostile and stray datagrams are counted and dropped, and change nothing for the session whose
// address they forge; malformed ones and HELLO, BYE and INPUT go to JavaScript.
void receiverSortsDatagrams() {
  SessionTable table(8, 1);
  Receiver rx(-1, table, false, 1 << 20, nullptr);
  rx.queueAcks(true);
  uint8_t tok[8], other[8];
  token(1, tok), token(2, other);
  const Endpoint victim = loopback(40001), stranger = loopback(40002);
  table.add(7, victim, tok, monotonicMs());
  Session* s;
  {
    std::lock_guard<std::mutex> lock(table.mutex());
    s = table.findViewer(7);
  }
  for (uint16_t q = 0; q < 3; ++q) s->sentPacket(q, monotonicMs());  // sequences 0..2 sent: credit 8 + 6 = 14
  auto inject = [&](const std::vector<uint8_t>& m, const Endpoint& from) { rx.inject(m.data(), m.size(), from); };
  const ReceiveCounters& c = rx.counters();
  inject(ackMsg(other, 2, 0), victim);  // forged: the victim's address, another token
  CHECK(c.badTokens == 1 && c.acks == 0, "a forged ACK passed");
  inject(ackMsg(tok, 2, 0), stranger);  // the right token from another address
  CHECK(c.strays == 1 && c.acks == 0, "an ACK from another address passed");
  inject(ackMsg(tok, 3, 0), victim);  // ahead of the newest sequence sent
  CHECK(c.badAcks == 1, "an ACK ahead of the newest packet passed");
  CHECK(s->ackCredit.load() == 14, "checks before the credit spent some: %d", s->ackCredit.load());
  for (int k = 0; k < 16; ++k) inject(ackMsg(tok, uint16_t(k % 3), 0), victim);
  CHECK(c.acks == 14 && c.acksThrottled == 2, "credit: %llu passed, %llu throttled", (unsigned long long)c.acks.load(),
         (unsigned long long)c.acksThrottled.load());
  std::vector<QueuedAck> acks;
  rx.takeAcks(acks);
  CHECK(acks.size() == 14 && acks[0].viewer == 7 && acks[0].ack == 0 && acks[13].ack == 13 % 3, "queued acks");
  std::vector<uint8_t> ping(kPingBytes, 0), bye(kByeBytes, 0), input(kInputHeaderBytes + 5, 0);
  ping[0] = kMsgPing, bye[0] = kMsgBye, input[0] = kMsgInput;
  std::memcpy(ping.data() + 1, tok, 8), std::memcpy(bye.data() + 1, tok, 8), std::memcpy(input.data() + 1, tok, 8);
  inject(ping, victim);
  CHECK(c.pings == 1, "ping");
  inject(bye, victim);
  inject(input, victim);
  std::vector<uint8_t> badKind = input;
  badKind[9] = 2;  // an INPUT kind that is neither 0 nor 1: malformed, JavaScript's to classify
  inject(badKind, victim);
  std::vector<uint8_t> hello(kHelloMinBytes, 0);
  hello[0] = kMsgHello;
  inject(hello, stranger);
  const std::vector<std::vector<uint8_t>> malformed = {
      {}, {kMsgAck}, std::vector<uint8_t>(kAckBytes + 1, kMsgAck), {kMsgPing}, {0x01, 0, 0, 0}, {0x42}, {0xA1, 1, 2}};
  for (const auto& m : malformed) inject(m, stranger);
  std::vector<uint8_t> huge(kMaxClientMessageBytes + 1, 0);
  inject(huge, stranger);
  CHECK(c.longCodes[size_t(LongCode::UnknownType)] == 1 && c.malformed == 1, "a datagram longer than any message");
  std::vector<uint8_t> batch;
  rx.takeBatch(batch);
  std::vector<Record> rs = records(batch);
  CHECK(rs.size() == 4 + malformed.size(), "%zu records for JavaScript", rs.size());
  if (rs.size() >= 4) {
    CHECK(rs[0].bytes == bye && rs[0].from == "127.0.0.1:40001", "BYE record");
    CHECK(rs[1].bytes == input && rs[2].bytes == badKind, "INPUT records");
    CHECK(rs[3].bytes == hello && rs[3].from == "127.0.0.1:40002", "HELLO record");
  }
  CHECK(c.datagrams == 3 + 16 + 1 + 1 + 2 + 1 + malformed.size() + 1, "datagrams %llu", (unsigned long long)c.datagrams.load());
  std::printf("receiver: forged, stray, early, throttled and malformed datagrams counted and dropped\n");
}

// The receive thread, with real clients: their ACKs queued in the order each sent them, BYEs
// handed over; close() joins it.
void receiveThreadQueuesAcks() {
  DataPathOptions o;
  o.bind = loopback(0);
  o.recvBufferBytes = 1 << 20;
  std::atomic<int> notified{0};
  DataPath dp(o, [&] { notified.fetch_add(1); });
  dp.setAttached(true);
  dp.start();
  const Endpoint server = dp.socket().local();
  constexpr unsigned kClients = 6, kAcks = 40;
  std::vector<Peer> clients(kClients);
  uint8_t packet[kGameHeaderBytes] = {kGamePacketVersion};
  for (unsigned i = 0; i < kClients; ++i) {
    uint8_t t[8];
    token(i, t);
    dp.sessions().add(100 + i, clients[i].at, t, monotonicMs());
    for (uint16_t q = 0; q < kAcks; ++q) {  // credit and sequences for every ACK to come
      setU16(packet + 2, q);
      CHECK(dp.sendOne(100 + i, packet, sizeof packet) == 0, "sendOne");
    }
  }
  std::vector<std::thread> senders;
  for (unsigned i = 0; i < kClients; ++i)
    senders.emplace_back([&, i] {
      uint8_t t[8];
      token(i, t);
      for (uint16_t q = 0; q < kAcks; ++q) {
        std::vector<uint8_t> m = ackMsg(t, q, q);
        clients[i].send(server, m.data(), m.size());
      }
      std::vector<uint8_t> bye(kByeBytes, 0);
      bye[0] = kMsgBye;
      std::memcpy(bye.data() + 1, t, 8);
      clients[i].send(server, bye.data(), bye.size());
    });
  for (auto& t : senders) t.join();
  std::vector<QueuedAck> all, some;
  std::vector<uint8_t> batch, part;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((all.size() < kClients * kAcks || records(batch).size() < kClients) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    dp.receiver().takeAcks(some);
    all.insert(all.end(), some.begin(), some.end());
    dp.receiver().takeBatch(part);
    batch.insert(batch.end(), part.begin(), part.end());
  }
  CHECK(all.size() == kClients * kAcks, "%zu of %u ACKs queued", all.size(), kClients * kAcks);
  std::vector<uint16_t> next(kClients, 0);
  bool ordered = true;
  for (const QueuedAck& a : all) ordered &= a.viewer >= 100 && a.viewer < 100 + kClients && a.ack == next[a.viewer - 100]++ && a.ackBits == a.ack;
  CHECK(ordered, "a client's ACKs were queued out of order");
  CHECK(records(batch).size() == kClients && notified.load() >= 1, "BYEs for JavaScript: %zu, told %d", records(batch).size(),
         notified.load());
  dp.close();
  CHECK(!dp.socket().isOpen(), "close() left the socket open");
  std::printf("receive thread: %zu ACKs queued in each client's order, %zu BYEs handed over\n", all.size(), records(batch).size());
}

// close() while ticks send from another thread: it waits for the send in progress; later ticks
// send nothing.
void closeWaitsForSends() {
  ConfigInput in;
  Config c = buildConfig(in);
  World w(c, 2048);
  for (int i = 0; i < 800; ++i) w.entities().spawn(c.regionRaw / 2 + i * 40, c.regionRaw / 2, 0);
  DataPathOptions o;
  o.bind = loopback(0);
  DataPath dp(o, nullptr);
  ThreadPool pool(2);
  dp.reserveThreads(2);
  for (uint32_t i = 0; i < 400; ++i) {
    const uint32_t id = w.entities().idOfSlot(i);
    w.addViewer(id, ViewerOptions{0, 1, false});
    uint8_t t[8];
    token(i, t);
    dp.sessions().add(id, loopback(uint16_t(20000 + i), "127.0.3.1"), t, monotonicMs());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> ticks{0};
  std::thread ticker([&] {
    while (!stop.load()) {
      w.prepareTick(pool.size());
      w.runPass(pool);
      dp.sendTick(w, pool);
      ticks.fetch_add(1);
    }
  });
  while (ticks.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  dp.close();
  const uint64_t sentAtClose = dp.totals().sent.load();
  while (ticks.load() < 8) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop.store(true);
  ticker.join();
  CHECK(dp.totals().sent.load() == sentAtClose, "sent after close(): %llu then %llu", (unsigned long long)sentAtClose,
         (unsigned long long)dp.totals().sent.load());
  std::printf("close() during sends: %llu packets before it, none after\n", (unsigned long long)sentAtClose);
}

// A swarm client acknowledges as ClientWorld would: the model keeps every sequence applied.
void swarmAcksAsClientWorld() {
  Peer server;
  SwarmOptions o;
  o.clients = 1;
  in_addr first;
  inet_pton(AF_INET, "127.1.7.1", &first);
  o.firstAddress = ntohl(first.s_addr);
  ClientSwarm swarm(o, nullptr);
  swarm.aim(server.at);
  uint8_t tok[8];
  token(9, tok);
  swarm.setConnected(0, true, false, tok);
  swarm.start();
  const Endpoint client = swarm.endpointOf(0);
  std::mt19937 rng(11);
  std::set<int64_t> applied;
  int64_t newest = -1;
  uint16_t seq = 65500;  // wraps within the run
  unsigned matched = 0;
  for (int k = 0; k < 300; ++k) {
    // Mostly forward, sometimes a repeat, a step back, or far back (stale), wrapping at 2^16.
    const unsigned r = rng() % 10;
    const uint16_t s = r < 6 ? uint16_t(seq + 1 + rng() % 3) : r < 8 ? uint16_t(seq - rng() % 8) : r < 9 ? seq : uint16_t(seq - 40);
    if (r < 6) seq = s;
    uint8_t packet[kGameHeaderBytes] = {kGamePacketVersion};
    setU16(packet + 2, s);
    setU32(packet + 4, uint32_t(k));
    server.send(client, packet, sizeof packet);
    // The model: ClientWorld.receive's sequence rules.
    const int64_t ext = newest < 0 ? (int64_t{1} << 20) + s : newest + int16_t(uint16_t(s - uint16_t(newest)));
    const bool stale = newest >= 0 && newest - ext > ClientSwarm::kMaxLateness;
    if (!stale && !applied.count(ext)) {
      applied.insert(ext);
      newest = std::max(newest, ext);
    }
    if (newest < 0) continue;
    uint32_t bits = 0;
    for (int i = 0; i < 32; ++i) bits |= applied.count(newest - 1 - i) ? 1u << i : 0;
    std::vector<uint8_t> got, want = ackMsg(tok, uint16_t(newest), bits);
    CHECK(server.next(got, 2000), "no ACK for packet %d", k);
    matched += got == want;
    CHECK(got == want, "packet %d (sequence %u): the ACK differs from ClientWorld's", k, s);
  }
  swarm.stop();
  std::vector<double> counts(kSwarmCounterFields);
  swarm.counters(counts.data());
  std::printf("swarm: %u ACKs as ClientWorld would send them (%.0f applied, %.0f duplicates, %.0f stale)\n", matched,
              counts[3], counts[4], counts[5]);
}

}  // namespace

void sessionIndexChecks();  // session_index_checks.cpp

// Runs the checks above (their results in test::failures and test::checks).
void netChecks() {
  sessionIndexChecks();
  sendsEachViewersBytes(1);
  sendsEachViewersBytes(2);
  sendsEachViewersBytes(8);
  removalIsFinalDuringSends();
  refusalsAreCountedAndTheRestSent();
  receiverSortsDatagrams();
  receiveThreadQueuesAcks();
  closeWaitsForSends();
  swarmAcksAsClientWorld();
}
