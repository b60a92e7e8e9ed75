#include "receiver.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "wire.h"

namespace sightline::net {

static_assert(Receiver::kDatagramBytes > kMaxClientMessageBytes, "a client message fits the read buffer");

Receiver::Receiver(int fd, SessionTable& sessions, bool forwardAcks, size_t maxBatchBytes, std::function<void()> notify)
    : fd_(fd), sessions_(sessions), forwardAcks_(forwardAcks), maxBatchBytes_(maxBatchBytes), notify_(std::move(notify)) {
  wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void Receiver::start() {
  if (thread_.joinable()) return;
  stop_.store(false);
  thread_ = std::thread([this] { run(); });
}

void Receiver::stop() {
  stop_.store(true);
  if (wake_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (wake_ >= 0) ::close(wake_);
  wake_ = -1;
}

void Receiver::queueAcks(bool on) {
  queueAcks_.store(on, std::memory_order_relaxed);
  if (!on) {
    std::lock_guard<std::mutex> lock(ackM_);
    acks_.clear();
  }
}

void Receiver::takeAcks(std::vector<QueuedAck>& out) {
  out.clear();
  std::lock_guard<std::mutex> lock(ackM_);
  out.swap(acks_);
}

void Receiver::takeBatch(std::vector<uint8_t>& out) {
  out.clear();
  std::lock_guard<std::mutex> lock(batchM_);
  out.swap(batch_);
  notified_ = false;
}

void Receiver::forward(uint8_t kind, const Endpoint* from, const uint8_t* data, size_t length) {
  std::string text = from ? from->addressText() : std::string();
  const size_t at = batchLocal_.size();
  batchLocal_.resize(at + kRecordHeader + text.size() + length);
  uint8_t* r = batchLocal_.data() + at;
  r[0] = kind;
  r[1] = uint8_t(text.size());
  setU16(r + 2, from ? from->port() : 0);
  setU32(r + 4, uint32_t(length));
  std::memcpy(r + kRecordHeader, text.data(), text.size());
  if (length) std::memcpy(r + kRecordHeader + text.size(), data, length);
}

// Caller holds sessions_.mutex(). The checks, and their order, are SessionHost.handle's
// (lib/net/session-host.ts): the message's exact layout, a session at the sender's address, its
// token; then, for an ACK, not ahead of the newest sequence sent and ack credit.
void Receiver::handle(const uint8_t* data, size_t length, const Endpoint& from, int64_t now) {
  ReceiveCounters& c = counters_;
  c.datagrams.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(length, std::memory_order_relaxed);
  if (length > kMaxClientMessageBytes) {
    // Longer than any message a client sends (and perhaps than the read buffer): malformed here,
    // tallied by the code the decoder would give it.
    c.malformed.fetch_add(1, std::memory_order_relaxed);
    c.longCodes[size_t(classifyLong(data))].fetch_add(1, std::memory_order_relaxed);
    return;
  }
  bool layout = false;
  switch (length == 0 ? -1 : data[0]) {
    case kMsgAck: layout = length == kAckBytes; break;
    case kMsgBye: layout = length == kByeBytes; break;
    case kMsgPing: layout = length == kPingBytes; break;
    case kMsgInput:
      layout = length >= kInputHeaderBytes && length <= kInputHeaderBytes + kInputMaxBytes && data[9] <= 1;
      break;
    default: break;
  }
  if (!layout) {
    // A HELLO, or something malformed: JavaScript decodes it (and counts it by its error code).
    forward(kDatagram, &from, data, length);
    return;
  }
  Session* s = sessions_.findPeer(from);
  if (!s) {
    c.strays.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (std::memcmp(data + 1, s->token, kTokenBytes) != 0) {
    c.badTokens.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  s->heardAtMs.store(now, std::memory_order_relaxed);
  switch (data[0]) {
    case kMsgAck: {
      const uint16_t ack = getU16(data + 9);
      const uint32_t bits = getU32(data + 11);
      if (ackAhead(ack, s->lastSequence.load(std::memory_order_relaxed))) {
        c.badAcks.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      // Taken only while some is left: the send threads add to it meanwhile.
      int32_t credit = s->ackCredit.load(std::memory_order_relaxed);
      do {
        if (credit <= 0) {
          c.acksThrottled.fetch_add(1, std::memory_order_relaxed);
          return;
        }
      } while (!s->ackCredit.compare_exchange_weak(credit, credit - 1, std::memory_order_relaxed));
      c.acks.fetch_add(1, std::memory_order_relaxed);
      if (queueAcks_.load(std::memory_order_relaxed)) acksLocal_.push_back({s->viewer, ack, bits});
      if (forwardAcks_) {
        uint8_t rec[10];
        setU32(rec, s->viewer), setU16(rec + 4, ack), setU32(rec + 6, bits);
        forward(kAck, nullptr, rec, sizeof rec);
      }
      return;
    }
    case kMsgPing:
      c.pings.fetch_add(1, std::memory_order_relaxed);
      return;
    default:
      // BYE and INPUT, from their session: JavaScript ends the session or takes the input.
      forward(kDatagram, &from, data, length);
  }
}

void Receiver::inject(const uint8_t* data, size_t length, const Endpoint& from) {
  std::lock_guard<std::mutex> sorting(sortM_);
  {
    std::lock_guard<std::mutex> lock(sessions_.mutex());
    handle(data, length, from, monotonicMs());
  }
  publish();
}

void Receiver::publish() {
  if (!acksLocal_.empty()) {
    std::lock_guard<std::mutex> lock(ackM_);
    acks_.insert(acks_.end(), acksLocal_.begin(), acksLocal_.end());
  }
  acksLocal_.clear();
  if (batchLocal_.empty()) return;
  bool tell = false;
  {
    std::lock_guard<std::mutex> lock(batchM_);
    // Whole records while they fit; the rest are dropped and counted.
    size_t at = 0;
    while (at < batchLocal_.size()) {
      const uint8_t* r = batchLocal_.data() + at;
      const size_t n = kRecordHeader + r[1] + getU32(r + 4);
      if (batch_.size() + n <= maxBatchBytes_) {
        batch_.insert(batch_.end(), r, r + n);
        if (r[0] == kDatagram) {
          counters_.forwarded.fetch_add(1, std::memory_order_relaxed);
          counters_.forwardedBytes.fetch_add(getU32(r + 4), std::memory_order_relaxed);
        }
      } else {
        counters_.batchDropped.fetch_add(1, std::memory_order_relaxed);
      }
      at += n;
    }
    if (!notified_ && !batch_.empty()) notified_ = tell = true;
  }
  batchLocal_.clear();
  if (tell && notify_) notify_();
}

void Receiver::run() {
  struct Slot {
    sockaddr_storage from;
    uint8_t data[kDatagramBytes];
  };
  std::vector<Slot> slots(kBatch);
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  unsigned naps = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    for (unsigned i = 0; i < kBatch; ++i) {
      iov[i].iov_base = slots[i].data;
      iov[i].iov_len = kDatagramBytes;
      std::memset(&msgs[i].msg_hdr, 0, sizeof(msghdr));
      msgs[i].msg_hdr.msg_name = &slots[i].from;
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_len = 0;
    }
    // MSG_TRUNC: msg_len is the datagram's real length even when longer than the buffer.
    const int n = ::recvmmsg(fd_, msgs, kBatch, MSG_DONTWAIT | MSG_TRUNC, nullptr);
    if (n > 0) {
      naps = 0;
      const int64_t now = monotonicMs();
      std::lock_guard<std::mutex> sorting(sortM_);
      {
        std::lock_guard<std::mutex> lock(sessions_.mutex());
        for (int i = 0; i < n; ++i) {
          Endpoint from;
          const size_t len = msgs[i].msg_len;
          if (!Endpoint::fromKernel(slots[i].from, msgs[i].msg_hdr.msg_namelen, from)) {
            counters_.datagrams.fetch_add(1, std::memory_order_relaxed);
            counters_.bytes.fetch_add(len, std::memory_order_relaxed);
            counters_.malformed.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          // A datagram longer than the buffer is longer than any message read here: malformed.
          handle(slots[i].data, len, from, now);
        }
      }
      publish();
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      counters_.socketErrors.fetch_add(1, std::memory_order_relaxed);
      ::usleep(kNapMicros);
      continue;
    }
    if (naps < kNapsBeforeBlocking) {
      ++naps;
      ::usleep(kNapMicros);
      continue;
    }
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
    ::poll(p, 2, -1);
    naps = 0;
  }
}

}  // namespace sightline::net
