#include "sender.h"

#include <cerrno>
#include <cstring>

#include "wire.h"

namespace sightline::net {

void Sender::reserveWorkers(unsigned n) {
  if (n > kJsWorker) n = kJsWorker;
  while (scratch_.size() < n) scratch_.push_back(std::make_unique<Scratch>());
}

void Sender::sendRange(const uint8_t* base, const uint32_t* index, uint32_t begin, uint32_t end, unsigned w,
                       SendCounters& out) {
  Scratch& s = scratch(w);
  uint32_t pending[kBatch];
  uint32_t i = begin;
  while (i < end) {
    unsigned n = 0;
    for (; i < end && n < kBatch; ++i)
      if (index[3 * size_t{i} + 2] != 0) pending[n++] = i;
    if (n == 0) break;
    // The gate from the lookups to the end of the sends: a session removed meanwhile waits for
    // this batch, so nothing goes to it once its removal returns.
    std::lock_guard<std::mutex> gate(sessions_.gate(w));
    unsigned m = 0;
    {
      std::lock_guard<std::mutex> lock(sessions_.mutex());
      for (unsigned k = 0; k < n; ++k) {
        const uint32_t* e = index + 3 * size_t{pending[k]};
        Session* session = sessions_.findViewer(e[0]);
        if (!session) {
          ++out.unrouted;
          continue;
        }
        s.to[m] = session->peer;
        s.session[m] = session;
        const uint8_t* bytes = base + e[1];
        const uint32_t len = e[2];
        s.sequence[m] = len >= 4 ? getU16(bytes + 2) : 0;
        s.length[m] = len;
        iovec* v = s.iov + 3 * m;
        if (len >= kGameHeaderBytes) {
          const uint32_t ack = session->inputAck.load(std::memory_order_relaxed);
          setU16(s.stamp[m], uint16_t(ack)), setU16(s.stamp[m] + 2, uint16_t(ack >> 16));
          v[0] = {const_cast<uint8_t*>(bytes), kInputAckOffset};
          v[1] = {s.stamp[m], 4};
          v[2] = {const_cast<uint8_t*>(bytes) + kInputAckOffset + 4, len - kInputAckOffset - 4};
        } else {
          v[0] = {const_cast<uint8_t*>(bytes), len};
          v[1] = {nullptr, 0};
          v[2] = {nullptr, 0};
        }
        ++m;
      }
    }
    for (unsigned k = 0; k < m; ++k) {
      msghdr& h = s.msgs[k].msg_hdr;
      h.msg_name = &s.to[k].addr;
      h.msg_namelen = s.to[k].len;
      h.msg_iov = s.iov + 3 * k;
      h.msg_iovlen = 3;
      h.msg_control = nullptr;
      h.msg_controllen = 0;
      h.msg_flags = 0;
      s.msgs[k].msg_len = 0;
    }
    if (m > 0) {
      // The sessions learn of the packets before they leave: a client may acknowledge one before
      // sendmmsg has returned (on loopback it arrives during the call), and an ACK ahead of the
      // newest sequence noted is refused. What the kernel then refuses was issued all the same,
      // as on the dgram path.
      const int64_t now = monotonicMs();
      for (unsigned k = 0; k < m; ++k) s.session[k]->sentPacket(s.sequence[k], now);
      flush(s, m, out);
    }
  }
}

void Sender::flush(Scratch& s, unsigned m, SendCounters& out) {
  unsigned k = 0;
  while (k < m) {
    const int r = sendCall_(fd_, s.msgs + k, m - k, 0);
    if (r > 0) {
      for (unsigned j = k; j < k + unsigned(r); ++j) {
        ++out.sent;
        out.bytes += s.length[j];
      }
      if (observer_) observer_(s.to + k, unsigned(r));
      k += unsigned(r);
      continue;
    }
    const int err = r < 0 ? errno : EIO;
    if (err == EINTR) continue;
    // sendmmsg stops at the first datagram it could not send: that one is counted, the rest tried.
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
      ++out.dropped;
    } else {
      ++out.failed;
      lastError_.store(err, std::memory_order_relaxed);
    }
    ++k;
  }
}

int Sender::sendTo(const Endpoint& to, const uint8_t* data, size_t length) {
  for (;;) {
    const ssize_t r = ::sendto(fd_, data, length, 0, &to.addr.sa, to.len);
    if (r >= 0) return 0;
    if (errno == EINTR) continue;
    const int err = errno;
    if (err != EAGAIN && err != EWOULDBLOCK && err != ENOBUFS) lastError_.store(err, std::memory_order_relaxed);
    return err == EWOULDBLOCK ? EAGAIN : err;
  }
}

}  // namespace sightline::net
