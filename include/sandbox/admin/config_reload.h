// ConfigReloader: what SIGHUP does. It reads the configuration again (the same --config file and
// command line), validates the whole of it, and applies what can change while the server runs:
// the tokens (server.token, server.tokens, server.admin_tokens, through the RequestGuard) and
// each pool's min_idle, max_total, max_concurrent_starts, limits and autoscale (through the
// PoolTuner; the file's values replace any made through the admin API). Anything else that
// differs (a pool's image or mode, a new or removed pool, listen address, sessions, ...) is
// logged as ignored until restart. An invalid file changes nothing: the running configuration
// stays and the error log line names the field. Each reload is counted in
// sandbox_config_reloads_total{result="applied"|"rejected"}.
// Thread-safety: Reload() may be called from any thread; calls are serialised.
#pragma once

#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/admin/pool_tuner.h"
#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/metrics/metrics.h"

namespace sandbox::admin {

// The differences between two configurations that only a restart applies, one line each
// ("pools[default].image", "pool 'gpu' added", "server (other than its tokens)", ...).
std::vector<std::string> RestartOnlyChanges(const config::Config& running,
                                            const config::Config& next);

struct ReloadOutcome {
  bool applied = false;
  std::string error;                 // why not, when not applied
  std::vector<std::string> ignored;  // RestartOnlyChanges
};

class ConfigReloader {
 public:
  using Loader = std::function<Result<config::Config>()>;
  // `guard` may be null (stdio: no tokens to change); `metrics` may be null.
  ConfigReloader(config::Config running, Loader load, http::RequestGuard* guard, PoolTuner& tuner,
                 metrics::Metrics* metrics, std::shared_ptr<spdlog::logger> logger);

  ReloadOutcome Reload();

 private:
  ReloadOutcome Apply(const config::Config& next);

  std::mutex mu_;
  config::Config running_;  // as started, with the live-changeable fields as last reloaded
  Loader load_;
  http::RequestGuard* guard_;
  PoolTuner& tuner_;
  metrics::Metrics* metrics_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sandbox::admin
