#include "sandbox/admin/pool_tuner.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace sandbox::admin {
namespace {

using nlohmann::json;

using config::LimitsJson;

json AutoscaleJson(const config::AutoscaleConfig& a) {
  return json{{"enabled", a.enabled},
              {"min_idle_floor", a.min_idle_floor},
              {"min_idle_ceiling", a.min_idle_ceiling},
              {"headroom", a.headroom},
              {"window_s", a.window.count()}};
}

std::string_view SourceName(ChangeSource source) {
  return source == ChangeSource::kApi ? "api" : "reload";
}

// Config validation speaks of "configuration pool.<field>"; a change made live names the pool.
Error Reworded(const Error& error, const std::string& pool) {
  std::string message = error.message();
  for (std::string_view prefix : {"configuration ", "pool."}) {
    if (message.starts_with(prefix)) message.erase(0, prefix.size());
  }
  return Error(error.code(), "pool '" + pool + "': " + message);
}

// A pool's network policy as the admin API shows it: the entries as written.
json NetworkJson(const config::NetworkPolicy& network) {
  json allow = json::array();
  json deny = json::array();
  for (const auto& rule : network.allow) allow.push_back(rule.text);
  for (const auto& rule : network.deny) deny.push_back(rule.text);
  const bool none = network.mode == config::NetworkPolicy::Mode::kNone;
  return {{"mode", none ? "none" : "allowlist"}, {"allow", allow}, {"deny", deny}};
}

Error UnknownPool(const std::string& pool) {
  return Error(ErrorCode::kNotFound, "no pool named '" + pool + "'");
}

// A PoolConfig holding what the config checks look at, for validating live settings.
config::PoolConfig AsConfig(const service::PoolSettings& s) {
  config::PoolConfig pc;
  pc.name = s.name;
  pc.min_idle = s.sizes.min_idle;
  pc.max_total = s.sizes.max_total;
  pc.max_concurrent_starts = s.sizes.max_concurrent_starts;
  pc.autoscale = s.autoscale;
  pc.limits = s.limits;
  pc.max_limits = s.max_limits;
  pc.network = s.network;
  return pc;
}

// `bound` (config/bounds.h) is named when the value does not even fit an int; a value that
// does is checked by the configuration's own checks, which name the same bound.
Status ReadInt(const json& change, const char* key, int bound, int& out) {
  auto it = change.find(key);
  if (it == change.end()) return OkStatus();
  if (!it->is_number_integer()) {
    return Error(ErrorCode::kInvalidArgument, std::string(key) + ": expected an integer");
  }
  const bool too_large = it->is_number_unsigned() ? it->get<std::uint64_t>() > INT32_MAX
                                                  : it->get<std::int64_t>() > INT32_MAX;
  if (too_large || (!it->is_number_unsigned() && it->get<std::int64_t>() < INT32_MIN)) {
    return Error(
        ErrorCode::kInvalidArgument,
        std::string(key) + ": " + it->dump() + " is out of its range 0-" + std::to_string(bound));
  }
  out = static_cast<int>(it->get<std::int64_t>());
  return OkStatus();
}

}  // namespace

json DrainJson(const pool::DrainProgress& progress) {
  return json{{"drains_total", progress.drains_total},
              {"to_replace", progress.to_replace},
              {"replaced", progress.replaced},
              {"remaining", progress.remaining()},
              {"done", progress.done()}};
}

PoolTuner::PoolTuner(service::TunablePools& pools, PoolBounds bounds, metrics::Metrics* metrics,
                     std::shared_ptr<spdlog::logger> logger)
    : pools_(pools), bounds_(std::move(bounds)), metrics_(metrics), logger_(std::move(logger)) {}

config::Config PoolTuner::LiveView(const service::PoolSettings& changed) const {
  config::Config view = bounds_.running;
  std::vector<config::PoolConfig> pools;
  for (const auto& name : pools_.PoolNames()) {
    const config::PoolConfig* configured = config::FindPool(bounds_.running, name);
    config::PoolConfig pc = configured != nullptr ? *configured : config::PoolConfig{};
    pc.name = name;
    auto live = name == changed.name ? std::optional(changed) : pools_.Settings(name);
    if (live) {
      pc.min_idle = live->sizes.min_idle;
      pc.max_total = live->sizes.max_total;
      pc.max_concurrent_starts = live->sizes.max_concurrent_starts;
    }
    pools.push_back(std::move(pc));
  }
  view.pools = std::move(pools);
  return view;
}

json PoolTuner::List() const {
  json out = json::array();
  for (const auto& name : pools_.PoolNames()) {
    auto pool = Describe(name);
    if (pool.ok()) out.push_back(std::move(pool).value());
  }
  return json{{"pools", out}};
}

Result<json> PoolTuner::Describe(const std::string& pool) const {
  auto settings = pools_.Settings(pool);
  auto stats = pools_.Stats(pool);
  if (!settings || !stats) return UnknownPool(pool);
  const auto& st = *stats;
  json autoscale = AutoscaleJson(settings->autoscale);
  autoscale["target"] = st.autoscaled ? json(st.min_idle_target) : json(nullptr);
  autoscale["peak_demand"] = st.autoscaled ? json(st.autoscale_peak) : json(nullptr);
  return json{{"name", settings->name},
              {"mode", settings->mode},
              {"image", settings->image},
              {"min_idle", settings->sizes.min_idle},
              {"min_idle_target", st.min_idle_target},
              {"max_total", settings->sizes.max_total},
              {"max_concurrent_starts", settings->sizes.max_concurrent_starts},
              {"autoscale", autoscale},
              {"limits", LimitsJson(settings->limits)},
              {"max_limits", LimitsJson(settings->max_limits)},
              {"network", NetworkJson(settings->network)},
              {"sandboxes",
               {{"idle", st.idle},
                {"leased", st.leased},
                {"starting", st.starting},
                {"checking", st.checking},
                {"destroying", st.destroying},
                {"waiting", st.waiting}}},
              {"drain", DrainJson(st.drain)}};
}

Result<json> PoolTuner::Patch(const std::string& pool, const json& change, const std::string& who) {
  if (!change.is_object()) {
    return Error(ErrorCode::kInvalidArgument, "the body must be a JSON object of changes");
  }
  if (change.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "nothing to change: send any of min_idle, max_total, max_concurrent_starts, "
                 "limits, autoscale, network");
  }
  for (const auto& item : change.items()) {
    static const std::vector<std::string> kKeys = {"min_idle", "max_total", "max_concurrent_starts",
                                                   "limits",   "autoscale", "network"};
    if (std::find(kKeys.begin(), kKeys.end(), item.key()) == kKeys.end()) {
      return Error(ErrorCode::kInvalidArgument,
                   item.key() +
                       ": not a tunable setting (min_idle, max_total, max_concurrent_starts, "
                       "limits, autoscale, network; anything else needs a restart)");
    }
  }
  std::lock_guard lock(change_mu_);
  auto before = pools_.Settings(pool);
  if (!before) return UnknownPool(pool);
  service::PoolSettings next = *before;
  for (const auto& [key, bound, out] :
       {std::tuple{"min_idle", config::kMaxPoolTotal, &next.sizes.min_idle},
        std::tuple{"max_total", config::kMaxPoolTotal, &next.sizes.max_total},
        std::tuple{"max_concurrent_starts", config::kMaxConcurrentStarts,
                   &next.sizes.max_concurrent_starts}}) {
    if (auto status = ReadInt(change, key, bound, *out); !status.ok()) {
      return Reworded(status.error(), pool);
    }
  }
  if (auto it = change.find("limits"); it != change.end()) {
    if (auto status = config::ApplyLimitsJson(*it, "limits", next.limits); !status.ok()) {
      return Reworded(status.error(), pool);
    }
  }
  if (auto it = change.find("autoscale"); it != change.end()) {
    if (auto status = config::ApplyAutoscaleJson(*it, "autoscale", next.autoscale); !status.ok()) {
      return Reworded(status.error(), pool);
    }
  }
  if (auto it = change.find("network"); it != change.end()) {
    if (auto status = config::ApplyNetworkJson(*it, "network", next.network); !status.ok()) {
      return Reworded(status.error(), pool);
    }
  }
  // min_idle is unused while autoscaled; it must only stay within a lowered max_total.
  if (next.autoscale.enabled && !change.contains("min_idle")) {
    next.sizes.min_idle = std::min(next.sizes.min_idle, std::max(next.sizes.max_total, 0));
  }
  if (change.contains("min_idle") && next.autoscale.enabled) {
    return Error(ErrorCode::kConflict,
                 "pool '" + pool +
                     "' is autoscaled: its min_idle follows demand; change "
                     "autoscale.min_idle_floor and autoscale.min_idle_ceiling, or send "
                     "\"autoscale\": {\"enabled\": false} with min_idle");
  }
  SANDBOX_RETURN_IF_ERROR(Change(*before, next, who, ChangeSource::kApi));
  return Describe(pool);
}

Status PoolTuner::ApplyConfigured(const config::PoolConfig& configured, const std::string& who) {
  std::lock_guard lock(change_mu_);
  auto before = pools_.Settings(configured.name);
  if (!before) return UnknownPool(configured.name);
  service::PoolSettings next = *before;
  next.sizes = {configured.min_idle, configured.max_total, configured.max_concurrent_starts};
  next.autoscale = configured.autoscale;
  next.limits = configured.limits;
  // A mode change waits for a restart (RestartOnlyChanges says so); new entries apply now.
  if (configured.network.mode == before->network.mode) next.network = configured.network;
  return Change(*before, next, who, ChangeSource::kReload);
}

Status PoolTuner::Change(const service::PoolSettings& before, const service::PoolSettings& next,
                         const std::string& who, ChangeSource source) {
  const std::string& pool = before.name;
  const config::PoolConfig pc = AsConfig(next);
  if (auto status = config::ValidatePoolSizes(pc, "pool"); !status.ok()) {
    return Reworded(status.error(), pool);
  }
  if (auto status = config::ValidatePoolLimits(pc.limits, pc.max_limits, "pool"); !status.ok()) {
    return Reworded(status.error(), pool);
  }
  if (next.network.mode != before.network.mode) {
    // Its sandboxes would need another network: one with a policy sits on an internal network
    // behind its proxy, one without has none at all.
    return Error(ErrorCode::kConflict,
                 "pool '" + pool +
                     "': network.mode: turning a pool's network on or off needs a "
                     "restart; entries change live");
  }
  if (auto status = config::ValidatePoolNetwork(pc, "pool.network"); !status.ok()) {
    return Reworded(status.error(), pool);
  }
  // A reload passed the same check on the whole file (Validate); checked here pool by pool, a
  // file that lowers one pool and raises another could be refused half-applied.
  if (source == ChangeSource::kApi) {
    if (auto status = config::CheckThreadBudget(LiveView(next), bounds_.host); !status.ok()) {
      std::string why = status.error().message();
      why.erase(0, why.find(": ") + 2);  // "configuration threads: "
      return Error(ErrorCode::kInvalidArgument, "pool '" + pool + "': max_concurrent_starts = " +
                                                    std::to_string(pc.max_concurrent_starts) +
                                                    " refused: " + why);
    }
  }
  if (!pools_.Apply(pool, next)) return UnknownPool(pool);
  const std::string_view via = SourceName(source);
  auto record = [&](std::string_view field, const std::string& from, const std::string& to) {
    logger_->info("admin: {} ({}) changed pool '{}' {}: {} -> {}", who, via, pool, field, from, to);
    if (metrics_ != nullptr) metrics_->RecordAdminChange(pool, field, via);
  };
  const auto& a = before.sizes;
  const auto& b = next.sizes;
  if (a.min_idle != b.min_idle) {
    record("min_idle", std::to_string(a.min_idle), std::to_string(b.min_idle));
  }
  if (a.max_total != b.max_total) {
    record("max_total", std::to_string(a.max_total), std::to_string(b.max_total));
  }
  if (a.max_concurrent_starts != b.max_concurrent_starts) {
    record("max_concurrent_starts", std::to_string(a.max_concurrent_starts),
           std::to_string(b.max_concurrent_starts));
  }
  if (!(before.limits == next.limits)) {
    record("limits", LimitsJson(before.limits).dump(), LimitsJson(next.limits).dump());
  }
  if (!(before.autoscale == next.autoscale)) {
    record("autoscale", AutoscaleJson(before.autoscale).dump(),
           AutoscaleJson(next.autoscale).dump());
  }
  if (!(before.network == next.network)) {
    record("network", config::DescribeNetworkPolicy(before.network),
           config::DescribeNetworkPolicy(next.network));
  }
  return OkStatus();
}

Result<json> PoolTuner::Drain(const std::string& pool, const std::string& who) {
  auto progress = pools_.Drain(pool);
  if (!progress) return UnknownPool(pool);
  logger_->info("admin: {} (api) drained pool '{}': {} sandboxes to replace", who, pool,
                progress->to_replace);
  if (metrics_ != nullptr) metrics_->RecordAdminChange(pool, "drain", "api");
  return DrainJson(*progress);
}

Result<json> PoolTuner::DrainStatus(const std::string& pool) const {
  auto stats = pools_.Stats(pool);
  if (!stats) return UnknownPool(pool);
  return DrainJson(stats->drain);
}

}  // namespace sandbox::admin
