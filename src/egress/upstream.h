// How the proxy reaches what a policy allowed: names are resolved, and an allowed address is
// turned into the socket address connected to. The product resolves with getaddrinfo and
// connects to the address itself; a test routes every allowed address to a loopback server
// (the policy rightly never allows loopback), so the proxy's decisions run unchanged.
// Thread-safety: Resolve is called on the resolver threads, Route on the event loop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/config/network_policy.h"
#include "sandbox/core/result.h"
#include "socket_address.h"

namespace sandbox::egress {

class Upstream {
 public:
  virtual ~Upstream() = default;
  // The addresses of a name the policy allowed (may block: it runs on a resolver thread).
  virtual Result<std::vector<config::IpAddress>> Resolve(const std::string& host) = 0;
  // Where to connect for an address the policy allowed.
  virtual SocketAddress Route(const config::IpAddress& address, std::uint16_t port) = 0;
};

// getaddrinfo (IPv4 and IPv6, TCP) and the address itself.
std::unique_ptr<Upstream> SystemUpstream();

}  // namespace sandbox::egress
