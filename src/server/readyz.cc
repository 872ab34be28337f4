// GET /readyz: whether this server should be sent work now (503 with the reasons when not).
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes.h"

namespace sandbox::server {
namespace {

using nlohmann::json;

void Readyz(const ProbeSources& sources, httplib::Response& res) {
  json body;
  std::vector<std::string> reasons;
  if (sources.draining != nullptr && sources.draining->load()) {
    reasons.emplace_back("the server is shutting down");
  }
  auto ping = PingEngine(sources);
  body["engine"] = ping.ok() ? "reachable" : ping.error().message();
  if (!ping.ok()) {
    reasons.push_back("the " + std::string(sources.engine->kind()) +
                      " engine does not answer: " + ping.error().message());
  }
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

void RegisterReadyz(httplib::Server& server, const ProbeSources& sources) {
  server.Get("/readyz",
             [sources](const httplib::Request&, httplib::Response& res) { Readyz(sources, res); });
}

}  // namespace sandbox::server
