// UdpSocket: one non-blocking UDP socket descriptor, owned (closed with the object). Opened and
// bound here, or adopted from a descriptor someone else opened (duplicated: the original stays
// the caller's). Buffer sizes are asked for with SO_SNDBUF / SO_RCVBUF and what the kernel granted
// is read back: Linux doubles the request (room for its bookkeeping) and caps it at twice
// net.core.wmem_max / rmem_max, so an unprivileged process may get less than it asked for.
#pragma once

#include <cstdint>
#include <string>

#include "endpoint.h"

namespace sightline::net {

class UdpSocket {
 public:
  UdpSocket() = default;
  ~UdpSocket() { close(); }
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;
  UdpSocket(UdpSocket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UdpSocket& operator=(UdpSocket&& o) noexcept;

  // A socket of `bindTo`'s family bound to it (port 0: the kernel picks one). IPv6 sockets accept
  // IPv4 peers too (v4-mapped) unless v6Only. Throws CoreError ERR_SIGHTLINE_NET_BIND with the
  // kernel's reason.
  static UdpSocket open(const Endpoint& bindTo, bool v6Only = false);
  // A duplicate of `fd` (a bound UDP socket), made non-blocking. Throws CoreError
  // ERR_SIGHTLINE_NET_BIND when fd is not a UDP socket of family AF_INET or AF_INET6.
  static UdpSocket adopt(int fd);

  int fd() const { return fd_; }
  bool isOpen() const { return fd_ >= 0; }
  int family() const;
  // The bound address (getsockname).
  Endpoint local() const;
  // Asks for `bytes` of send / receive buffer; returns what the kernel granted (getsockopt), or -1
  // when it refused the call (errno kept).
  int setSendBuffer(int bytes);
  int setRecvBuffer(int bytes);
  int sendBuffer() const;
  int recvBuffer() const;
  // Sets the don't-fragment bit on every datagram and skips path MTU discovery (IP_PMTUDISC_PROBE):
  // a datagram larger than the interface MTU fails with EMSGSIZE instead of leaving in fragments.
  // Unconnected IPv4 datagrams without it each take an IP ID from the kernel's shared hashed
  // counters (measured here: 9.6 % of the send path's CPU with 8,192 destinations).
  bool setDontFragment();
  // Delivers the destination address of each received datagram (IP_PKTINFO / IPV6_RECVPKTINFO).
  bool setReceivePacketInfo();
  void close();

 private:
  explicit UdpSocket(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// "what: strerror(errno)".
std::string errnoText(const char* what, int err);

}  // namespace sightline::net
