#include "endpoint.h"

#include <arpa/inet.h>

namespace sightline::net {

uint16_t Endpoint::port() const {
  if (family() == AF_INET) return ntohs(addr.v4.sin_port);
  if (family() == AF_INET6) return ntohs(addr.v6.sin6_port);
  return 0;
}

std::string Endpoint::addressText() const {
  char t[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) inet_ntop(AF_INET, &addr.v4.sin_addr, t, sizeof t);
  else if (family() == AF_INET6) inet_ntop(AF_INET6, &addr.v6.sin6_addr, t, sizeof t);
  return t;
}

bool Endpoint::operator==(const Endpoint& o) const {
  if (family() != o.family()) return false;
  if (family() == AF_INET)
    return addr.v4.sin_port == o.addr.v4.sin_port && addr.v4.sin_addr.s_addr == o.addr.v4.sin_addr.s_addr;
  if (family() == AF_INET6)
    return addr.v6.sin6_port == o.addr.v6.sin6_port && addr.v6.sin6_scope_id == o.addr.v6.sin6_scope_id &&
           std::memcmp(&addr.v6.sin6_addr, &o.addr.v6.sin6_addr, sizeof(in6_addr)) == 0;
  return len == o.len;
}

size_t Endpoint::hash() const {
  // FNV-1a over the address bytes and the port.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  if (family() == AF_INET) {
    mix(&addr.v4.sin_addr, sizeof(in_addr));
    mix(&addr.v4.sin_port, 2);
  } else if (family() == AF_INET6) {
    mix(&addr.v6.sin6_addr, sizeof(in6_addr));
    mix(&addr.v6.sin6_port, 2);
  }
  return size_t(h ^ (h >> 29));
}

bool Endpoint::parse(const std::string& text, uint16_t port, int family, Endpoint& out) {
  out = Endpoint();
  if (family == AF_INET) {
    if (inet_pton(AF_INET, text.c_str(), &out.addr.v4.sin_addr) != 1) return false;
    out.addr.v4.sin_family = AF_INET;
    out.addr.v4.sin_port = htons(port);
    out.len = sizeof(sockaddr_in);
    return true;
  }
  if (family == AF_INET6) {
    in_addr v4;
    if (inet_pton(AF_INET6, text.c_str(), &out.addr.v6.sin6_addr) != 1) {
      if (inet_pton(AF_INET, text.c_str(), &v4) != 1) return false;
      // ::ffff:a.b.c.d, as a dual-stack socket reports an IPv4 peer.
      uint8_t* b = out.addr.v6.sin6_addr.s6_addr;
      std::memset(b, 0, 10);
      b[10] = b[11] = 0xff;
      std::memcpy(b + 12, &v4, 4);
    }
    out.addr.v6.sin6_family = AF_INET6;
    out.addr.v6.sin6_port = htons(port);
    out.len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

bool Endpoint::fromKernel(const sockaddr_storage& ss, socklen_t len, Endpoint& out) {
  if (ss.ss_family == AF_INET && len >= socklen_t(sizeof(sockaddr_in))) {
    out = Endpoint();
    std::memcpy(&out.addr.v4, &ss, sizeof(sockaddr_in));
    out.len = sizeof(sockaddr_in);
    return true;
  }
  if (ss.ss_family == AF_INET6 && len >= socklen_t(sizeof(sockaddr_in6))) {
    out = Endpoint();
    std::memcpy(&out.addr.v6, &ss, sizeof(sockaddr_in6));
    out.addr.v6.sin6_flowinfo = 0;
    out.len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace sightline::net
