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
  // Ready while any engine answers: the pools place their starts on the ones that do.
  const auto pings = PingEngines(sources);
  const EnginePing* answering = nullptr;
  for (const auto& p : pings) {
    if (p.status.ok()) answering = &p;
  }
  const EnginePing& first = pings.front();
  body["engine"] = answering != nullptr ? "reachable" : first.status.error().message();
  if (pings.size() > 1) body["engines"] = EnginesJson(pings);
  if (answering == nullptr) {
    for (const auto& p : pings) {
      reasons.push_back("the " + std::string(p.engine->kind()) + " engine" +
                        (pings.size() > 1 ? " " + p.engine->name() : std::string()) +
                        " does not answer: " + p.status.error().message());
    }
  }
  // A pool whose engines are all down or draining cannot serve, whatever else answers.
  for (const auto& [pool, why] : sources.service->PoolsWithoutEngine()) {
    reasons.push_back("pool '" + pool + "' " + why);
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
