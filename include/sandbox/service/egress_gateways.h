// EgressGateways: the egress proxy and internal network of every pool with a network policy, one
// of each per engine the pool runs on (docs/network.md). A gateway is made when the first
// sandbox of its pool starts on its engine: the network (internal, inter-container traffic off,
// no IPv6, a /24 of egress.subnets with its bridge named for the host firewall), then the proxy
// container (`sandbox-egress`, at .2, also on egress.upstream_network) attached by its stdio:
// policies go to it as control lines on its stdin, its decisions come back as JSON lines on its
// stdout and become audit lines (logger "audit", message "egress") and a callback for metrics.
// Before the first sandbox joins, the proxy probes the host firewall (a connection from the
// bridge to its gateway must be refused by the host's rules, EHOSTUNREACH, not by a closed
// port). A proxy that ends is started again at the next sandbox start, with every admitted
// address told again. Stop() removes proxies and networks; the proxy also ends by itself when
// its attach closes (the server died) and the engine removes it.
//
// Thread-safety: every method from any thread. For() hands out links that live as long as this.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/runner/egress_link.h"

namespace sandbox::service {

// One connection (or refused DNS query) the proxy decided, for metrics.
struct EgressEvent {
  std::string pool;  // "" when the source address was not admitted
  std::string engine;
  std::string kind;     // "conn" or "dns"
  std::string verdict;  // "allowed" or "refused" (dns: always "refused")
};

// One gateway as sandbox_info and the admin API show it.
struct EgressStatus {
  std::string pool;
  std::string engine;
  std::string network;  // "" until made
  std::string subnet;
  std::string proxy_address;
  bool up = false;
  int admitted = 0;        // sandbox addresses the proxy knows
  std::string last_error;  // of the last failed start; "" after a success
};

struct EgressOptions {
  config::EgressConfig config;
  std::string instance_id;
  engine::Labels labels;  // every network and proxy gets these too (the owner label)
  std::chrono::milliseconds ready_timeout{30000};    // proxy started -> `ready`
  std::function<void(const EgressEvent&)> on_event;  // from a gateway's reader thread
  std::shared_ptr<spdlog::logger> audit;             // null: no audit lines
  // Credentials (network.inject): the deployment CA (PEM; empty: none), the extra upstream
  // trust, and the value of a server environment variable (nullopt: unset). Never logged.
  std::string ca_cert_pem;
  std::string ca_key_pem;
  std::string upstream_ca_pem;
  std::function<std::optional<std::string>(const std::string& name)> secret;
};

class EgressGateway;

class EgressGateways {
 public:
  EgressGateways(EgressOptions options, std::shared_ptr<spdlog::logger> logger);
  ~EgressGateways();  // Stop()
  EgressGateways(const EgressGateways&) = delete;
  EgressGateways& operator=(const EgressGateways&) = delete;

  // The link of `pool` on `engine`: null for a pool without a network policy. Made on the first
  // ask, started on the first Join. `engine` must outlive this.
  runner::EgressLink* For(const engine::ContainerEngine& engine, const config::PoolConfig& pool);
  // Removes the egress networks of this instance that no container is attached to (an earlier
  // server's, which ended without removing them). Start-up, before any gateway starts.
  void SweepLeftovers(const engine::ContainerEngine& engine);
  // A live change of a pool's policy (the admin API, SIGHUP), within the mode it has: every
  // gateway of the pool tells its proxy for every sandbox at once (a narrowed one gets its
  // narrowing of the new policy). kNotFound for a pool without a policy.
  Status SetPolicy(const std::string& pool, const config::NetworkPolicy& policy);
  // The pool's policy now; nullopt for a pool without one.
  std::optional<config::NetworkPolicy> Policy(const std::string& pool) const;
  std::vector<EgressStatus> Statuses() const;
  // Every proxy stopped and removed, then every network (after the sandboxes are gone).
  void Stop();

  // The /24 block `index` of `subnets` ("10.213.0.0/16", 3 -> "10.213.3.0/24"); "" past its end.
  static std::string Block(const std::string& subnets, int index);

 private:
  int NextBlock();  // shared by every gateway, so no two of this server pick the same block

  EgressOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<EgressGateway>> gateways_;
  std::map<std::string, config::NetworkPolicy> policies_;  // by pool
  std::atomic<int> next_block_{0};
};

}  // namespace sandbox::service
