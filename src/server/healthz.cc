// GET /healthz: liveness, whether the container engine answers, and the pools' and sessions'
// counters (no authentication: counts only).
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "probes.h"

namespace sandbox::server {
namespace {

using nlohmann::json;

void Healthz(const ProbeSources& sources, httplib::Response& res) {
  // Degraded while any engine does not answer; down (503) while none does.
  const auto pings = PingEngines(sources);
  int answering = 0;
  const EnginePing* silent = nullptr;
  for (const auto& p : pings) {
    if (p.status.ok()) {
      ++answering;
    } else if (silent == nullptr) {
      silent = &p;
    }
  }
  json body = {{"status", silent == nullptr ? "ok" : "degraded"},
               {"engine", silent == nullptr
                              ? std::string("reachable")
                              : (pings.size() > 1 ? silent->engine->name() + ": " : std::string()) +
                                    silent->status.error().message()}};
  if (pings.size() > 1) body["engines"] = EnginesJson(pings);
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
  res.status = answering > 0 ? 200 : 503;
  res.set_content(body.dump(), "application/json");
}

}  // namespace

void RegisterHealthz(httplib::Server& server, const ProbeSources& sources) {
  server.Get("/healthz",
             [sources](const httplib::Request&, httplib::Response& res) { Healthz(sources, res); });
}

}  // namespace sandbox::server
