// The pools as the admin API and the configuration reload see them: their live settings, read
// and changed by pool name. SandboxService implements it; tests use fakes. No Docker types.
// Thread-safety: every method from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/pool/warm_pool.h"

namespace sandbox::service {

// What may change while a pool runs, and what it is pinned to.
struct PoolSettings {
  std::string name;
  std::string mode;       // "recycle" or "fresh"
  std::string image;      // fixed until restart
  pool::PoolSizes sizes;  // min_idle, max_total, max_concurrent_starts
  config::AutoscaleConfig autoscale;
  config::Limits limits;      // the default limits of a run (new runs take changes)
  config::Limits max_limits;  // fixed until restart: what limits are validated against
  // What its code may reach: its entries change live, its mode (none or allowlist) only with a
  // restart (docs/network.md).
  config::NetworkPolicy network;
};

class TunablePools {
 public:
  virtual ~TunablePools() = default;
  // In name order.
  virtual std::vector<std::string> PoolNames() const = 0;
  // nullopt for an unknown pool (also below).
  virtual std::optional<PoolSettings> Settings(const std::string& pool) const = 0;
  virtual std::optional<pool::PoolStats> Stats(const std::string& pool) const = 0;
  // Applies sizes, autoscale and limits of `settings` (already validated by the caller; the
  // fixed fields are ignored). False for an unknown pool.
  virtual bool Apply(const std::string& pool, const PoolSettings& settings) = 0;
  virtual std::optional<pool::DrainProgress> Drain(const std::string& pool) = 0;
};

}  // namespace sandbox::service
