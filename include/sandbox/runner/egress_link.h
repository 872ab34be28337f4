// EgressLink: what a sandbox of a pool with a network policy needs from the egress gateway of
// its engine (docs/network.md): the network to join, and the proxy told which policy the
// sandbox's address gets. service::EgressGateway implements it; the runner knows only this.
// Thread-safety: every method from any thread.
#pragma once

#include <string>

#include "sandbox/config/network_policy.h"
#include "sandbox/core/result.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/engine/deadline.h"

namespace sandbox::runner {

class EgressLink {
 public:
  virtual ~EgressLink() = default;
  EgressLink() = default;
  EgressLink(const EgressLink&) = delete;
  EgressLink& operator=(const EgressLink&) = delete;

  // Makes sure the pool's network and proxy run on the engine; what the sandbox's spec needs.
  virtual Result<engine::SandboxNetwork> Join(engine::Deadline deadline) = 0;
  // From now on connections from `address` are decided by `narrowed` (a narrowing of the
  // pool's policy), or by the pool's own policy when it is null, as it is now and as live changes
  // make it; replaces what the address had. Returns once the proxy applied it.
  virtual Status Admit(const std::string& address, const config::NetworkPolicy* narrowed,
                       engine::Deadline deadline) = 0;
  // Connections from `address` are refused from now on (its sandbox is going away).
  virtual void Forget(const std::string& address) = 0;
};

}  // namespace sandbox::runner
