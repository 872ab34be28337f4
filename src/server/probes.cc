// The probes' shared reads, GET /metrics and the registration of every probe (/healthz and
// /readyz have files of their own).
#include "probes.h"

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

Status PingEngine(const ProbeSources& sources) {
  return sources.engine->Ping(engine::DeadlineAfter(std::chrono::seconds(2)));
}

metrics::Snapshot TakeSnapshot(const ProbeSources& sources, bool engine_up) {
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
  now.engine_up = engine_up;
  return now;
}

void RegisterProbes(httplib::Server& server, const ProbeSources& sources) {
  RegisterHealthz(server, sources);
  RegisterReadyz(server, sources);
  server.Get("/metrics", [sources](const httplib::Request&, httplib::Response& res) {
    const bool engine_up = PingEngine(sources).ok();
    res.set_content(sources.metrics->Render(TakeSnapshot(sources, engine_up)),
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
