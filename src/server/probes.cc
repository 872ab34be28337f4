#include "probes.h"

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "sandbox/core/log_context.h"

namespace sandbox::server {
namespace {

using nlohmann::json;

// Both pool lists: one-shot pools and session pools ("<pool>/sessions").
std::vector<std::pair<std::string, pool::PoolStats>> AllPoolStats(const ProbeSources& sources) {
  auto pools = sources.service->PoolStats();
  if (sources.sessions != nullptr) {
    for (auto& entry : sources.sessions->PoolStats()) pools.push_back(std::move(entry));
  }
  return pools;
}

std::string ModeOf(const ProbeSources& sources, const std::string& pool) {
  if (pool.ends_with("/sessions")) return "fresh";
  const auto* config = config::FindPool(*sources.config, pool);
  if (config == nullptr) return "unknown";
  return std::string(config::PoolModeName(config->mode));
}

Status Ping(const ProbeSources& sources) {
  auto ping = sources.client->Ping(docker::CallOptions::Within(std::chrono::seconds(2)));
  if (!ping.ok()) return ping.error();
  return OkStatus();
}

void Healthz(const ProbeSources& sources, httplib::Response& res) {
  auto ping = Ping(sources);
  json body = {{"status", ping.ok() ? "ok" : "degraded"},
               {"engine", ping.ok() ? "reachable" : ping.error().message()}};
  json pools = json::array();
  for (const auto& [name, stats] : sources.service->PoolStats()) {
    // Counts only (no authentication here): for tuning min_idle, max_total and starts.
    pools.push_back(
        {{"name", name},
         {"idle", stats.idle},
         {"leased", stats.leased},
         {"starting", stats.starting},
         {"waiting", stats.waiting},
         {"destroying", stats.destroying},
         {"acquired_total", stats.acquired_total},
         {"created_total", stats.created_total},
         {"destroyed_total", stats.destroyed_total},
         {"start_failures_total", stats.start_failures_total},
         {"acquire_timeouts_total", stats.acquire_timeouts_total},
         {"starts_with_waiters_total", stats.starts_with_waiters_total},
         {"start_ms_mean", static_cast<double>(stats.start_latency_mean().count()) / 1000.0},
         {"start_ms_max", static_cast<double>(stats.start_latency_max.count()) / 1000.0}});
  }
  body["pools"] = pools;
  if (sources.sessions != nullptr) {
    auto st = sources.sessions->stats();
    body["sessions"] = {{"active", st.active},
                        {"created_total", st.created_total},
                        {"expired_total", st.expired_total},
                        {"restarts_total", st.restarts_total},
                        {"restored_total", st.restored_total}};
  }
  res.status = ping.ok() ? 200 : 503;
  res.set_content(body.dump(), "application/json");
}

void Readyz(const ProbeSources& sources, httplib::Response& res) {
  json body;
  std::vector<std::string> reasons;
  if (sources.draining != nullptr && sources.draining->load()) {
    reasons.emplace_back("the server is shutting down");
  }
  auto ping = Ping(sources);
  body["engine"] = ping.ok() ? "reachable" : ping.error().message();
  if (!ping.ok()) reasons.push_back("the Docker engine does not answer: " + ping.error().message());
  json pools = json::array();
  for (const auto& [name, stats] : AllPoolStats(sources)) {
    auto readiness = ReadinessOf(stats);
    json pool = {{"name", name}, {"ready", readiness.ready}};
    if (!readiness.ready) {
      pool["reason"] = readiness.reason;
      reasons.push_back("pool '" + name + "' " + readiness.reason);
    }
    pools.push_back(std::move(pool));
  }
  body["pools"] = std::move(pools);
  body["ready"] = reasons.empty();
  if (!reasons.empty()) body["reasons"] = reasons;
  res.status = reasons.empty() ? 200 : 503;
  res.set_content(body.dump(), "application/json");
}

}  // namespace

PoolReadiness ReadinessOf(const pool::PoolStats& stats) {
  if (stats.idle > 0 || stats.starting > 0) return {true, ""};
  if (stats.consecutive_start_failures == 0) return {true, ""};
  std::string reason = "cannot start sandboxes (" +
                       std::to_string(stats.consecutive_start_failures) + " failed in a row";
  if (stats.last_start_error) reason += ": " + stats.last_start_error->message();
  return {false, reason + ")"};
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
  if (sources.stream_slots != nullptr) {
    now.streams_open = sources.stream_slots->in_use();
    now.stream_slots = sources.stream_slots->capacity();
  }
  now.engine_up = engine_up;
  return now;
}

void RegisterProbes(httplib::Server& server, const ProbeSources& sources) {
  server.Get("/healthz",
             [sources](const httplib::Request&, httplib::Response& res) { Healthz(sources, res); });
  server.Get("/readyz",
             [sources](const httplib::Request&, httplib::Response& res) { Readyz(sources, res); });
  server.Get("/metrics", [sources](const httplib::Request&, httplib::Response& res) {
    const bool engine_up = Ping(sources).ok();
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
