// Socket addresses and the policy's IpAddress, converted both ways, and the listening address
// of a "HOST:PORT" flag.
// Thread-safety: pure functions (getaddrinfo is thread-safe).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "sandbox/config/network_policy.h"
#include "sandbox/core/result.h"

namespace sandbox::egress {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

SocketAddress ToSocketAddress(const config::IpAddress& address, std::uint16_t port);
// The address of an IPv4 or IPv6 socket address (IPv4-mapped IPv6 as IPv4).
config::IpAddress ToIpAddress(const sockaddr_storage& address);
std::string AddressText(const sockaddr_storage& address);

// A numeric host ("0.0.0.0", "::", "127.0.0.1") and port to bind; a name is resolved.
Result<SocketAddress> ResolveListenAddress(const std::string& host, int port, int socktype);
// The local port a socket is bound to.
int BoundPort(int fd);

// "HOST:PORT" or "[V6]:PORT" of a --listen flag.
Result<std::pair<std::string, int>> ParseHostPort(const std::string& text);

}  // namespace sandbox::egress
