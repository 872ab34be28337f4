#include "sandbox/admin/config_reload.h"

#include <utility>

namespace sandbox::admin {
namespace {

// `pool` with the fields a reload applies copied from `from`, so what remains to compare is
// what only a restart changes.
config::PoolConfig WithTunablesOf(config::PoolConfig pool, const config::PoolConfig& from) {
  pool.min_idle = from.min_idle;
  pool.max_total = from.max_total;
  pool.max_concurrent_starts = from.max_concurrent_starts;
  pool.limits = from.limits;
  pool.autoscale = from.autoscale;
  // The entries change live; turning the network on or off does not.
  if (pool.network.mode == from.network.mode) pool.network = from.network;
  return pool;
}

// `docker` with the fields that say which engines there are cleared, so what remains to
// compare is the rest (call_timeout_ms).
config::DockerConfig WithoutEngines(config::DockerConfig docker) {
  docker.engines.clear();
  docker.host.clear();
  docker.tls_ca.clear();
  docker.tls_cert.clear();
  docker.tls_key.clear();
  return docker;
}

}  // namespace

std::vector<std::string> RestartOnlyChanges(const config::Config& running,
                                            const config::Config& next) {
  std::vector<std::string> out;
  config::ServerConfig server = next.server;
  server.token = running.server.token;
  server.tokens = running.server.tokens;
  server.admin_tokens = running.server.admin_tokens;
  if (!(server == running.server)) out.emplace_back("server (other than its tokens)");
  if (!(next.sessions == running.sessions)) out.emplace_back("sessions");
  if (!(next.per_principal == running.per_principal)) out.emplace_back("per_principal");
  // The engines (docker.engines, or the docker.host shorthand) are connected, checked and swept
  // at start-up only.
  if (!(config::EffectiveEngines(next.docker) == config::EffectiveEngines(running.docker))) {
    out.emplace_back("docker.engines (the engine list, or docker.host and docker.tls_*)");
  }
  if (!(WithoutEngines(next.docker) == WithoutEngines(running.docker))) {
    out.emplace_back("docker (other than its engines)");
  }
  if (!(next.policy == running.policy)) out.emplace_back("policy");
  if (!(next.output == running.output)) out.emplace_back("output");
  if (next.default_pool != running.default_pool) out.emplace_back("default_pool");
  if (next.log_level != running.log_level) out.emplace_back("log_level");
  if (next.log_format != running.log_format) out.emplace_back("log_format");
  if (next.instance_id != running.instance_id) out.emplace_back("instance_id");
  for (const auto& pool : next.pools) {
    const auto* was = config::FindPool(running, pool.name);
    if (was == nullptr) {
      out.push_back("pool '" + pool.name + "' added");
      continue;
    }
    if (pool.engines != was->engines) out.push_back("pools[" + pool.name + "].engines");
    config::PoolConfig same_engines = pool;
    same_engines.engines = was->engines;
    if (!(WithTunablesOf(same_engines, *was) == *was)) {
      out.push_back("pools[" + pool.name +
                    "] (other than min_idle, max_total, max_concurrent_starts, limits, autoscale, "
                    "network entries)");
    }
  }
  for (const auto& pool : running.pools) {
    if (config::FindPool(next, pool.name) == nullptr) {
      out.push_back("pool '" + pool.name + "' removed");
    }
  }
  return out;
}

ConfigReloader::ConfigReloader(config::Config running, Loader load, http::RequestGuard* guard,
                               PoolTuner& tuner, metrics::Metrics* metrics,
                               std::shared_ptr<spdlog::logger> logger)
    : running_(std::move(running)),
      load_(std::move(load)),
      guard_(guard),
      tuner_(tuner),
      metrics_(metrics),
      logger_(std::move(logger)) {}

ReloadOutcome ConfigReloader::Reload() {
  std::lock_guard lock(mu_);
  ReloadOutcome outcome;
  auto next = load_();
  if (next.ok()) {
    if (auto valid = config::Validate(*next, tuner_.host()); !valid.ok()) {
      outcome.error = valid.error().message();
    } else {
      outcome = Apply(*next);
    }
  } else {
    outcome.error = next.error().message();
  }
  if (!outcome.applied) {
    logger_->error("configuration reload rejected, the running configuration stays: {}",
                   outcome.error);
  }
  if (metrics_ != nullptr) metrics_->RecordConfigReload(outcome.applied ? "applied" : "rejected");
  return outcome;
}

ReloadOutcome ConfigReloader::Apply(const config::Config& next) {
  ReloadOutcome outcome;
  outcome.ignored = RestartOnlyChanges(running_, next);
  // Validated as a whole first, so a pool refusing its change here is a bug, not input.
  for (const auto& pool : next.pools) {
    for (auto& running : running_.pools) {
      if (running.name != pool.name) continue;  // a new pool is ignored
      if (auto status = tuner_.ApplyConfigured(pool, "SIGHUP"); !status.ok()) {
        outcome.error = status.error().message();
        return outcome;
      }
      running = WithTunablesOf(running, pool);
    }
  }
  const auto& s = next.server;
  const auto& r = running_.server;
  if (s.token != r.token || s.tokens != r.tokens || s.admin_tokens != r.admin_tokens) {
    if (guard_ != nullptr) guard_->SetTokens(s.token, s.tokens, s.admin_tokens);
    // Names only: token values never reach a log.
    auto names = [](const std::map<std::string, std::string>& m) {
      std::string out;
      for (const auto& [name, token] : m) out += (out.empty() ? "" : ", ") + name;
      return out.empty() ? std::string("none") : out;
    };
    logger_->info(
        "configuration reload: tokens replaced (server.token {}; server.tokens: {}; "
        "server.admin_tokens: {})",
        s.token.empty() ? "unset" : (s.token == r.token ? "unchanged" : "changed"), names(s.tokens),
        names(s.admin_tokens));
    running_.server.token = s.token;
    running_.server.tokens = s.tokens;
    running_.server.admin_tokens = s.admin_tokens;
  }
  for (const auto& what : outcome.ignored) {
    logger_->warn("configuration reload: {} changed; ignored until restart", what);
  }
  logger_->info("configuration reloaded ({} change(s) ignored until restart)",
                outcome.ignored.size());
  outcome.applied = true;
  return outcome;
}

}  // namespace sandbox::admin
