// Endpoint: an IPv4 or IPv6 socket address (address and port), as the kernel takes and gives it,
// hashable so that a session can be found by its peer's address. Linux data path only (net/).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace sightline::net {

struct Endpoint {
  union {
    sockaddr sa;
    sockaddr_in v4;
    sockaddr_in6 v6;
  } addr;
  socklen_t len = 0;

  Endpoint() { std::memset(&addr, 0, sizeof addr); }
  int family() const { return len == 0 ? AF_UNSPEC : addr.sa.sa_family; }
  uint16_t port() const;
  // Numeric text of the address without the port, as Node's dgram reports it ("127.0.0.1", "::1",
  // "::ffff:10.0.0.1").
  std::string addressText() const;
  // Same family, address and port (IPv6: flow info and scope id ignored but the scope).
  bool operator==(const Endpoint& o) const;
  size_t hash() const;

  // Parses a numeric address (no names: a data path never waits on a resolver). family AF_INET or
  // AF_INET6; an IPv4 address for an AF_INET6 socket becomes its v4-mapped form. Returns false when
  // `text` is not a numeric address of that family.
  static bool parse(const std::string& text, uint16_t port, int family, Endpoint& out);
  // Copies what recvmsg/recvmmsg wrote into a sockaddr of `len` bytes. False for anything but
  // AF_INET / AF_INET6.
  static bool fromKernel(const sockaddr_storage& ss, socklen_t len, Endpoint& out);
};

}  // namespace sightline::net
