#include "endpoint.h"

#include <arpa/inet.h>

#include "flat_index.h"

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
  // The address and port packed into words, through MurmurHash3's finalizer (flat_index.h).
  if (family() == AF_INET)
    return size_t(mixBits((uint64_t(addr.v4.sin_addr.s_addr) << 16) ^ addr.v4.sin_port ^ (uint64_t(AF_INET) << 48)));
  if (family() == AF_INET6) {
    uint64_t w[2];
    std::memcpy(w, &addr.v6.sin6_addr, sizeof w);
    return size_t(mixBits(mixBits(w[0] ^ addr.v6.sin6_port) ^ w[1] ^ (uint64_t(addr.v6.sin6_scope_id) << 16)));
  }
  return 0;
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
