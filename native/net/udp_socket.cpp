#include "udp_socket.h"

#include <fcntl.h>
#include <netinet/ip.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "errors.h"

namespace sightline::net {

std::string errnoText(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

UdpSocket& UdpSocket::operator=(UdpSocket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

UdpSocket UdpSocket::open(const Endpoint& bindTo, bool v6Only) {
  const int family = bindTo.family();
  if (family != AF_INET && family != AF_INET6)
    throw CoreError("ERR_SIGHTLINE_NET_BIND", "a UDP socket binds an IPv4 or IPv6 address");
  int fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw CoreError("ERR_SIGHTLINE_NET_BIND", errnoText("socket", errno));
  UdpSocket s(fd);
  if (family == AF_INET6) {
    int v = v6Only ? 1 : 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof v);
  }
  if (::bind(fd, &bindTo.addr.sa, bindTo.len) != 0) {
    const int err = errno;
    throw CoreError("ERR_SIGHTLINE_NET_BIND",
                    "cannot bind UDP " + bindTo.addressText() + ":" + std::to_string(bindTo.port()) + ": " + std::strerror(err));
  }
  return s;
}

UdpSocket UdpSocket::adopt(int fd) {
  int type = 0;
  socklen_t tl = sizeof type;
  if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_DGRAM)
    throw CoreError("ERR_SIGHTLINE_NET_BIND", "descriptor " + std::to_string(fd) + " is not a UDP socket");
  int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) throw CoreError("ERR_SIGHTLINE_NET_BIND", errnoText("dup", errno));
  UdpSocket s(dup);
  const int fam = s.family();
  if (fam != AF_INET && fam != AF_INET6)
    throw CoreError("ERR_SIGHTLINE_NET_BIND", "descriptor " + std::to_string(fd) + " is not an IPv4 or IPv6 socket");
  // O_NONBLOCK lives on the open file description, which the duplicate shares with the original.
  int flags = ::fcntl(dup, F_GETFL);
  if (flags < 0 || ::fcntl(dup, F_SETFL, flags | O_NONBLOCK) != 0)
    throw CoreError("ERR_SIGHTLINE_NET_BIND", errnoText("fcntl", errno));
  return s;
}

int UdpSocket::family() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return AF_UNSPEC;
  return ss.ss_family;
}

Endpoint UdpSocket::local() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  Endpoint e;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) Endpoint::fromKernel(ss, len, e);
  return e;
}

namespace {
int getInt(int fd, int level, int name) {
  int v = 0;
  socklen_t l = sizeof v;
  return ::getsockopt(fd, level, name, &v, &l) == 0 ? v : -1;
}
}  // namespace

int UdpSocket::setSendBuffer(int bytes) {
  if (::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) != 0) return -1;
  return sendBuffer();
}

int UdpSocket::setRecvBuffer(int bytes) {
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) != 0) return -1;
  return recvBuffer();
}

int UdpSocket::sendBuffer() const { return getInt(fd_, SOL_SOCKET, SO_SNDBUF); }
int UdpSocket::recvBuffer() const { return getInt(fd_, SOL_SOCKET, SO_RCVBUF); }

bool UdpSocket::setDontFragment() {
  int v4 = IP_PMTUDISC_PROBE;
  bool ok = ::setsockopt(fd_, IPPROTO_IP, IP_MTU_DISCOVER, &v4, sizeof v4) == 0;
  if (family() == AF_INET6) {
    int v6 = IPV6_PMTUDISC_PROBE;
    ok = ::setsockopt(fd_, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v6, sizeof v6) == 0 || ok;
  }
  return ok;
}

bool UdpSocket::setReceivePacketInfo() {
  int one = 1;
  if (family() == AF_INET6) return ::setsockopt(fd_, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one) == 0;
  return ::setsockopt(fd_, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) == 0;
}

void UdpSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace sightline::net
