// The probes' shared reads, GET /metrics and the registration of every probe (/healthz and
// /readyz have files of their own).
#include "probes.h"

#include <future>
#include <utility>
#include <vector>

#include "sandbox/core/log_context.h"

namespace sandbox::server {
namespace {

std::string ModeOf(const ProbeSources& sources, const std::string& pool) {
  if (pool.ends_with("/sessions")) return "fresh";
  const auto* config = config::FindPool(*sources.config, pool);
  if (config == nullptr) return "unknown";
  return std::string(config::PoolModeName(config->mode));
}

}  // namespace

std::vector<std::pair<std::string, pool::PoolStats>> AllPoolStats(const ProbeSources& sources) {
  auto pools = sources.service->PoolStats();
  if (sources.sessions != nullptr) {
    for (auto& entry : sources.sessions->PoolStats()) pools.push_back(std::move(entry));
  }
  return pools;
}

std::vector<EnginePing> PingEngines(const ProbeSources& sources) {
  const auto& engines = sources.service->engines();
  const auto deadline = engine::DeadlineAfter(std::chrono::seconds(2));
  std::vector<EnginePing> pings;
  if (engines.size() == 1) {
    pings.push_back({engines.front(), engines.front()->Ping(deadline)});
    return pings;
  }
  // At once: a stalled engine costs its 2 s once, not once per engine after it.
  std::vector<std::future<Status>> answers;
  answers.reserve(engines.size());
  for (const auto* engine : engines) {
    answers.push_back(
        std::async(std::launch::async, [engine, deadline] { return engine->Ping(deadline); }));
  }
  for (std::size_t i = 0; i < engines.size(); ++i) pings.push_back({engines[i], answers[i].get()});
  return pings;
}

nlohmann::json EnginesJson(const std::vector<EnginePing>& pings) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& p : pings) {
    out[p.engine->name()] = p.status.ok() ? "reachable" : p.status.error().message();
  }
  return out;
}

metrics::Snapshot TakeSnapshot(const ProbeSources& sources, const std::vector<EnginePing>& pings) {
  metrics::Snapshot now;
  for (const auto& [name, stats] : AllPoolStats(sources)) {
    metrics::PoolSnapshot pool;
    pool.name = name;
    pool.mode = ModeOf(sources, name);
    pool.idle = stats.idle;
    pool.leased = stats.leased;
    pool.starting = stats.starting;
    pool.checking = stats.checking;
    pool.destroying = stats.destroying;
    pool.waiting = stats.waiting;
    pool.max_total = stats.sizes.max_total;
    pool.min_idle = stats.sizes.min_idle;
    pool.min_idle_target = stats.min_idle_target;
    pool.max_concurrent_starts = stats.sizes.max_concurrent_starts;
    pool.autoscaled = stats.autoscaled;
    pool.drain_remaining = stats.drain.remaining();
    pool.created_total = stats.created_total;
    pool.start_failures_total = stats.start_failures_total;
    pool.destroyed_total = stats.destroyed_total;
    pool.acquire_timeouts_total = stats.acquire_timeouts_total;
    pool.health_check_failures_total = stats.health_check_failures_total;
    now.pools.push_back(std::move(pool));
  }
  if (sources.sessions != nullptr) {
    auto st = sources.sessions->stats();
    now.sessions = metrics::SessionSnapshot{st.active, st.created_total, st.expired_total,
                                            st.restarts_total, st.restored_total};
  }
  if (sources.streamable != nullptr) now.mcp_sessions = sources.streamable->session_count();
  if (sources.tasks != nullptr) {
    const mcp::KeptResultStats kept = sources.tasks->kept_results();
    now.task_results = metrics::KeptResultsSnapshot{kept.bytes, kept.max_bytes, kept.evicted_total};
  }
  if (sources.stream_slots != nullptr) {
    now.streams_open = sources.stream_slots->in_use();
    now.stream_slots = sources.stream_slots->capacity();
  }
  if (sources.inflight != nullptr) {
    now.inflight_bytes = sources.inflight->in_use();
    now.inflight_capacity = sources.inflight->capacity();
    now.inflight_peak = sources.inflight->peak();
    now.inflight_refused = sources.inflight->refused();
  }
  for (const auto& p : pings) now.engines.push_back({p.engine->name(), p.status.ok()});
  for (const auto& x : sources.service->excluded()) now.excluded.push_back({x.engine, x.pool});
  return now;
}

void RegisterProbes(httplib::Server& server, const ProbeSources& sources) {
  RegisterHealthz(server, sources);
  RegisterReadyz(server, sources);
  server.Get("/metrics", [sources](const httplib::Request&, httplib::Response& res) {
    res.set_content(sources.metrics->Render(TakeSnapshot(sources, PingEngines(sources))),
                    std::string(metrics::kTextFormat));
  });
  // Every answer is counted by route template, method and status, after it was written.
  server.set_logger(
      [metrics = sources.metrics](const httplib::Request& req, const httplib::Response& res) {
        metrics->RecordHttpRequest(metrics::RouteOf(req.path), req.method, res.status);
        // The answer is written: this worker's next log lines belong to no request (the guard
        // set the id when the request arrived).
        SetRequestId({});
      });
}

}  // namespace sandbox::server
