// A TCP connect from the proxy's own network namespace, for the server's start-up check of the
// host firewall (control.h, op "probe"): from a pool's bridge, a host with the egress ruleset
// answers a connect to its gateway address with EHOSTUNREACH (the REJECT), a host without it
// with ECONNREFUSED or a connection (docs/network.md).
// Thread-safety: a pure function (blocks its caller for at most `timeout`).
#pragma once

#include <chrono>
#include <cstdint>

#include "sandbox/config/network_policy.h"

namespace sandbox::egress {

// How long a probe waits for the connect to be answered; beyond it, ETIMEDOUT.
inline constexpr std::chrono::milliseconds kProbeTimeout{2'000};

// Connects to `address`:`port` without blocking and closes at once: 0 when the connection was
// made, else the errno that refused it (ETIMEDOUT when nothing answered within `timeout`).
int ProbeTcp(const config::IpAddress& address, std::uint16_t port,
             std::chrono::milliseconds timeout = kProbeTimeout);

}  // namespace sandbox::egress
