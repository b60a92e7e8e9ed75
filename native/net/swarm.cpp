#include "swarm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "errors.h"
#include "wire.h"

namespace sightline::net {

namespace {
// The first extended sequence (ClientWorld's EXT_BASE): room below it for packets older than the first.
constexpr int64_t kExtBase = int64_t{1} << 20;
constexpr size_t kPktInfoSpace = CMSG_SPACE(sizeof(in_pktinfo));
}  // namespace

ClientSwarm::ClientSwarm(const SwarmOptions& o, std::function<void()> notify)
    : opts_(o), clients_(o.clients), notify_(std::move(notify)) {
  if (o.threads < 1) opts_.threads = 1;
  if (uint64_t(o.firstAddress) + o.clients > 0xffffffffull)
    throw CoreError("ERR_SIGHTLINE_NET_BIND", "the swarm's addresses run past 255.255.255.255");
  for (Client& c : clients_) std::fill(std::begin(c.ring), std::end(c.ring), int64_t{-1});
  Endpoint any;
  Endpoint::parse("0.0.0.0", 0, AF_INET, any);
  for (unsigned t = 0; t < opts_.threads; ++t) {
    auto w = std::make_unique<Worker>();
    w->socket = UdpSocket::open(any);
    if (o.recvBufferBytes > 0) w->socket.setRecvBuffer(o.recvBufferBytes);
    if (o.sendBufferBytes > 0) w->socket.setSendBuffer(o.sendBufferBytes);
    if (!w->socket.setReceivePacketInfo())
      throw CoreError("ERR_SIGHTLINE_NET_BIND", errnoText("IP_PKTINFO", errno));
    w->port = w->socket.local().port();
    w->server = o.server;
    workers_.push_back(std::move(w));
  }
  local_.resize(opts_.threads);
  dropped_.resize(opts_.threads);
  for (auto& d : dropped_) d.reserve(kBatch);
  wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void ClientSwarm::start() {
  for (unsigned t = 0; t < workers_.size(); ++t)
    if (!workers_[t]->thread.joinable()) workers_[t]->thread = std::thread([this, t] { run(t); });
}

void ClientSwarm::stop() {
  stop_.store(true);
  if (wake_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wake_, &one, sizeof one);
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
  for (auto& w : workers_) w->socket.close();
  if (wake_ >= 0) ::close(wake_);
  wake_ = -1;
}

Endpoint ClientSwarm::endpointOf(uint32_t client) const {
  Endpoint e;
  e.addr.v4.sin_family = AF_INET;
  e.addr.v4.sin_addr.s_addr = htonl(opts_.firstAddress + client);
  e.addr.v4.sin_port = htons(workers_[client % workers_.size()]->port);
  e.len = sizeof(sockaddr_in);
  return e;
}

std::vector<uint16_t> ClientSwarm::ports() const {
  std::vector<uint16_t> p;
  for (auto& w : workers_) p.push_back(w->port);
  return p;
}

int ClientSwarm::recvBuffer() const { return workers_[0]->socket.recvBuffer(); }
int ClientSwarm::sendBuffer() const { return workers_[0]->socket.sendBuffer(); }

namespace {
// A msghdr to the server from `from` (IP_PKTINFO names the source address).
void sourceControl(msghdr& h, uint8_t* control, in_addr from) {
  h.msg_control = control;
  h.msg_controllen = kPktInfoSpace;
  cmsghdr* cm = CMSG_FIRSTHDR(&h);
  cm->cmsg_level = IPPROTO_IP;
  cm->cmsg_type = IP_PKTINFO;
  cm->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
  in_pktinfo info{};
  info.ipi_spec_dst = from;
  std::memcpy(CMSG_DATA(cm), &info, sizeof info);
}
}  // namespace

void ClientSwarm::aim(const Endpoint& server) {
  for (auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->m);
    w->server = server;
  }
}

int ClientSwarm::send(uint32_t c, const uint8_t* data, size_t length) {
  if (c >= clients_.size() || stop_.load()) return EINVAL;
  Worker& w = *workers_[c % workers_.size()];
  alignas(cmsghdr) uint8_t control[kPktInfoSpace] = {0};
  iovec iov{const_cast<uint8_t*>(data), length};
  msghdr h{};
  Endpoint server;
  {
    std::lock_guard<std::mutex> lock(w.m);
    server = w.server;
  }
  if (server.family() != AF_INET) return EDESTADDRREQ;
  h.msg_name = &server.addr;
  h.msg_namelen = server.len;
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  sourceControl(h, control, endpointOf(c).addr.v4.sin_addr);
  for (;;) {
    if (::sendmsg(w.socket.fd(), &h, 0) >= 0) return 0;
    if (errno != EINTR) return errno == EWOULDBLOCK ? EAGAIN : errno;
  }
}

void ClientSwarm::setConnected(uint32_t c, bool connected, bool sample, const uint8_t* token) {
  if (c >= clients_.size()) return;
  Worker& w = *workers_[c % workers_.size()];
  std::lock_guard<std::mutex> lock(w.m);
  Client& k = clients_[c];
  k.connected = connected;
  k.sample = sample;
  if (token) std::memcpy(k.token, token, sizeof k.token);
  k.newest = -1;
  k.newestTick = 0;
  k.nextEvent = -1;
  std::fill(std::begin(k.ring), std::end(k.ring), int64_t{-1});
}

void ClientSwarm::counters(double* out) const {
  for (uint32_t i = 0; i < clients_.size(); ++i) {
    Worker& w = *workers_[i % workers_.size()];
    std::lock_guard<std::mutex> lock(w.m);
    const SwarmClientCounters& c = clients_[i].c;
    const uint64_t v[kSwarmCounterFields] = {c.datagrams, c.bytes,   c.gamePackets,    c.applied,       c.duplicates,
                                             c.stale,     c.malformed, c.reordered,    c.acksSent,      c.acksDropped,
                                             c.events,    c.repeatedEvents, c.skippedEvents, c.early, c.newestTick};
    for (unsigned k = 0; k < kSwarmCounterFields; ++k) out[size_t{i} * kSwarmCounterFields + k] = double(v[k]);
  }
}

void ClientSwarm::takeBatch(std::vector<uint8_t>& out) {
  out.clear();
  std::lock_guard<std::mutex> lock(batchM_);
  out.swap(batch_);
  notified_ = false;
}

void ClientSwarm::forward(unsigned t, uint8_t kind, uint32_t client, const uint8_t* a, size_t na, const uint8_t* b,
                          size_t nb) {
  std::vector<uint8_t>& l = local_[t];
  const size_t at = l.size();
  l.resize(at + kRecordHeader + na + nb);
  uint8_t* r = l.data() + at;
  r[0] = kind, r[1] = 0, r[2] = 0, r[3] = 0;
  setU32(r + 4, client);
  setU32(r + 8, uint32_t(na + nb));
  if (na) std::memcpy(r + kRecordHeader, a, na);
  if (nb) std::memcpy(r + kRecordHeader + na, b, nb);
}

void ClientSwarm::publish(unsigned t) {
  std::vector<uint8_t>& l = local_[t];
  if (l.empty()) return;
  bool tell = false;
  {
    std::lock_guard<std::mutex> lock(batchM_);
    size_t at = 0;
    while (at < l.size()) {
      const size_t n = kRecordHeader + getU32(l.data() + at + 8);
      if (batch_.size() + n <= opts_.maxBatchBytes) batch_.insert(batch_.end(), l.begin() + at, l.begin() + at + n);
      else batchDropped_.fetch_add(1, std::memory_order_relaxed);
      at += n;
    }
    if (!notified_ && !batch_.empty()) notified_ = tell = true;
  }
  l.clear();
  if (tell && notify_) notify_();
}

uint32_t ClientSwarm::ackBits(const Client& c) {
  uint32_t bits = 0;
  for (int i = 0; i < 32; ++i) {
    const int64_t e = c.newest - 1 - i;
    if (c.ring[e & (kRing - 1)] == e) bits |= 1u << i;
  }
  return bits;
}

void ClientSwarm::apply(unsigned t, Client& k, uint32_t index, const uint8_t* p, size_t len) {
  // The header, and the events section's bounds: what a light client reads.
  size_t end = kGameHeaderBytes;
  const uint8_t flags = p[1];
  uint16_t firstEvent = 0;
  uint8_t eventCount = 0;
  if (flags & 1) {
    if (len < end + 3) {
      ++k.c.malformed;
      return;
    }
    firstEvent = getU16(p + end);
    eventCount = p[end + 2];
    end += 3;
    if (eventCount == 0) {
      ++k.c.malformed;
      return;
    }
    for (unsigned e = 0; e < eventCount; ++e) {
      if (len < end + 2 || getU16(p + end) == 0 || len < end + 2 + getU16(p + end)) {
        ++k.c.malformed;
        return;
      }
      end += 2 + getU16(p + end);
    }
  }
  const uint16_t seq = getU16(p + 2);
  const uint32_t tick = getU32(p + 4);
  int64_t ext;
  if (k.newest < 0) {
    ext = kExtBase + seq;
  } else {
    const int32_t d = int32_t((uint32_t(seq) - uint32_t(k.newest % 65536) + 65536 + 32768) % 65536) - 32768;
    ext = k.newest + d;
    if (-d > kMaxLateness) {
      ++k.c.stale;
      return;
    }
  }
  int64_t& slot = k.ring[ext & (kRing - 1)];
  if (slot == ext) {
    ++k.c.duplicates;
    return;
  }
  slot = ext;
  ++k.c.applied;
  if (ext > k.newest) {
    k.newest = ext;
    k.newestTick = tick;
    k.c.newestTick = tick;
  } else {
    ++k.c.reordered;
  }
  if (k.sample || eventCount == 0) return;
  // Each event once, in order (ClientWorld's rule): older sequences than the next expected are
  // repeats; a jump past it skips the ones between.
  size_t at = kGameHeaderBytes + 3;
  for (unsigned e = 0; e < eventCount; ++e) {
    const uint16_t n = getU16(p + at);
    const uint16_t sequence = uint16_t(firstEvent + e);
    const uint8_t* bytes = p + at + 2;
    at += 2 + n;
    if (k.nextEvent >= 0) {
      const uint32_t d = (uint32_t(sequence) - uint32_t(k.nextEvent) + 65536) % 65536;
      if (d >= 32768) {
        ++k.c.repeatedEvents;
        continue;
      }
      k.c.skippedEvents += d;
    }
    k.nextEvent = (sequence + 1) % 65536;
    ++k.c.events;
    uint8_t head[2];
    setU16(head, sequence);
    forward(t, kEvent, index, head, 2, bytes, n);
  }
}

bool ClientSwarm::take(unsigned t, Client& k, uint32_t index, const uint8_t* data, size_t len) {
  ++k.c.datagrams;
  k.c.bytes += len;
  if (len > 0 && data[0] == kGamePacketVersion) {
    if (!k.connected) {
      ++k.c.early;
      return false;
    }
    ++k.c.gamePackets;
    if (len < kGameHeaderBytes) ++k.c.malformed;
    else apply(t, k, index, data, len);
    if (k.sample) forward(t, kPacket, index, data, len, nullptr, 0);
    return k.newest >= 0;  // UdpClient acknowledges once it has applied a packet
  }
  if (len > 0 && data[0] >= 0xA0 && data[0] <= 0xAF) {
    forward(t, kControl, index, data, len, nullptr, 0);
    return false;
  }
  ++k.c.malformed;
  return false;
}

void ClientSwarm::run(unsigned t) {
  Worker& w = *workers_[t];
  const unsigned T = unsigned(workers_.size());
  std::vector<uint8_t> data(size_t{kBatch} * kDatagramBytes);
  struct alignas(cmsghdr) Control {
    uint8_t b[kPktInfoSpace + 64];
  };
  std::vector<Control> control(kBatch), ackControl(kBatch);
  std::vector<sockaddr_storage> from(kBatch);
  mmsghdr msgs[kBatch], acks[kBatch];
  iovec iov[kBatch], ackIov[kBatch];
  uint8_t ackBytes[kBatch][kAckBytes];
  uint32_t ackClient[kBatch];
  Endpoint server;
  unsigned naps = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    for (unsigned i = 0; i < kBatch; ++i) {
      iov[i] = {data.data() + size_t{i} * kDatagramBytes, kDatagramBytes};
      std::memset(&msgs[i].msg_hdr, 0, sizeof(msghdr));
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_control = control[i].b;
      msgs[i].msg_hdr.msg_controllen = sizeof control[i].b;
    }
    const int n = ::recvmmsg(w.socket.fd(), msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        ::usleep(kNapMicros);
        continue;
      }
      if (naps < kNapsBeforeBlocking) {
        ++naps;
        ::usleep(kNapMicros);
      } else {
        pollfd p[2] = {{w.socket.fd(), POLLIN, 0}, {wake_, POLLIN, 0}};
        ::poll(p, 2, -1);
        naps = 0;
      }
      continue;
    }
    naps = 0;
    unsigned m = 0;
    {
      std::lock_guard<std::mutex> lock(w.m);
      server = w.server;
      for (int i = 0; i < n; ++i) {
        uint32_t dst = 0;
        bool found = false;
        for (cmsghdr* cm = CMSG_FIRSTHDR(&msgs[i].msg_hdr); cm; cm = CMSG_NXTHDR(&msgs[i].msg_hdr, cm)) {
          if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
            in_pktinfo info;
            std::memcpy(&info, CMSG_DATA(cm), sizeof info);
            dst = ntohl(info.ipi_addr.s_addr);
            found = true;
          }
        }
        const uint32_t index = dst - opts_.firstAddress;
        if (!found || dst < opts_.firstAddress || index >= clients_.size() || index % T != t) {
          strays_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        Client& k = clients_[index];
        const uint8_t* bytes = data.data() + size_t(i) * kDatagramBytes;
        if (!take(t, k, index, bytes, msgs[i].msg_len) || server.family() != AF_INET) continue;
        uint8_t* a = ackBytes[m];
        a[0] = kMsgAck;
        std::memcpy(a + 1, k.token, kTokenBytes);
        setU16(a + 9, uint16_t(k.newest % 65536));
        setU32(a + 11, ackBits(k));
        ackClient[m++] = index;
      }
    }
    for (unsigned i = 0; i < m; ++i) {
      ackIov[i] = {ackBytes[i], kAckBytes};
      std::memset(&acks[i].msg_hdr, 0, sizeof(msghdr));
      acks[i].msg_hdr.msg_name = &server.addr;
      acks[i].msg_hdr.msg_namelen = server.len;
      acks[i].msg_hdr.msg_iov = &ackIov[i];
      acks[i].msg_hdr.msg_iovlen = 1;
      std::memset(ackControl[i].b, 0, sizeof ackControl[i].b);
      sourceControl(acks[i].msg_hdr, ackControl[i].b, endpointOf(ackClient[i]).addr.v4.sin_addr);
    }
    unsigned k = 0, sent = 0;
    std::vector<uint32_t>& dropped = dropped_[t];
    dropped.clear();
    while (k < m) {
      const int r = ::sendmmsg(w.socket.fd(), acks + k, m - k, 0);
      if (r > 0) {
        k += unsigned(r), sent += unsigned(r);
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      dropped.push_back(ackClient[k]);
      ++k;
    }
    if (m > 0) {
      std::lock_guard<std::mutex> lock(w.m);
      for (unsigned i = 0; i < m; ++i) ++clients_[ackClient[i]].c.acksSent;
      for (uint32_t c : dropped) --clients_[c].c.acksSent, ++clients_[c].c.acksDropped;
    }
    publish(t);
  }
}

}  // namespace sightline::net
