// PoolTuner: the one place that changes a running pool's settings, for the admin API and the
// configuration reload alike. It validates a change with the configuration's own checks
// (config::ValidatePoolSizes / ValidatePoolLimits, so a change passes exactly when the same
// values would pass in the file, upper bounds included: config/bounds.h), applies it through
// service::TunablePools, logs who changed what (old -> new) and counts it in the metrics
// (sandbox_admin_changes_total). A change through the API must also keep the server within its
// thread budget (config::CheckThreadBudget over the running configuration with every pool's
// live sizes), the same check the file passes at start-up and on SIGHUP.
//
// An autoscaled pool's min_idle follows demand: a change of min_idle is refused (kConflict)
// unless the same change turns the autoscaler off; its bounds are changed through `autoscale`
// (min_idle_floor, min_idle_ceiling, ...).
// Thread-safety: every method from any thread; changes are serialised.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/metrics/metrics.h"
#include "sandbox/service/tunable_pools.h"

namespace sandbox::admin {

// Where a change came from, for the logs and the metrics' `source` label.
enum class ChangeSource { kApi, kReload };

// What a change is checked against besides the pool's own values.
struct PoolBounds {
  // The configuration as started: what the rest of the server costs in threads. Its pools'
  // sizes are replaced by the live ones when a change is checked.
  config::Config running;
  config::HostLimits host;  // config::ReadHostLimits() in main; {}: the fixed ceilings alone
};

class PoolTuner {
 public:
  // `metrics` may be null (nothing counted); `logger` must not be.
  PoolTuner(service::TunablePools& pools, PoolBounds bounds, metrics::Metrics* metrics,
            std::shared_ptr<spdlog::logger> logger);

  // The host's limits the configuration is validated against (the SIGHUP reload uses them).
  const config::HostLimits& host() const { return bounds_.host; }

  // Every pool's view (Describe), in name order.
  nlohmann::json List() const;
  // One pool: its settings, sandboxes by state, the autoscaler's target and the latest drain.
  // kNotFound for an unknown pool.
  Result<nlohmann::json> Describe(const std::string& pool) const;

  // Applies a JSON change: any of min_idle, max_total, max_concurrent_starts (integers), limits
  // (an object of limit fields, merged over the current ones) and autoscale (an object of its
  // fields, merged likewise). Errors: kNotFound (pool), kInvalidArgument (unknown key, wrong
  // type, a value config validation refuses; the message names the field), kConflict (min_idle
  // of an autoscaled pool). Returns Describe() after the change.
  Result<nlohmann::json> Patch(const std::string& pool, const nlohmann::json& change,
                               const std::string& who);

  // Sets the tunable fields of a configured pool (a reloaded file): only what differs changes.
  // The caller validated the whole configuration.
  Status ApplyConfigured(const config::PoolConfig& pool, const std::string& who);

  // Starts a drain (POST) / reports the latest one (GET). kNotFound for an unknown pool.
  Result<nlohmann::json> Drain(const std::string& pool, const std::string& who);
  Result<nlohmann::json> DrainStatus(const std::string& pool) const;

 private:
  // Validates `next` against the pool (with `path` naming it), applies and logs what changed.
  Status Change(const service::PoolSettings& before, const service::PoolSettings& next,
                const std::string& who, ChangeSource source);

  // The running configuration with every pool's live sizes and `changed` in place of its own.
  config::Config LiveView(const service::PoolSettings& changed) const;

  service::TunablePools& pools_;
  const PoolBounds bounds_;
  metrics::Metrics* metrics_;
  std::shared_ptr<spdlog::logger> logger_;
  std::mutex change_mu_;  // one change at a time: each validates against what the last left
};

// The JSON of a drain's progress: drains_total, to_replace, replaced, remaining, done.
nlohmann::json DrainJson(const pool::DrainProgress& progress);

}  // namespace sandbox::admin
