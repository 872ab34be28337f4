// The operator's endpoints: GET /healthz (liveness and counters), GET /readyz (whether this
// server should be sent work now) and GET /metrics (Prometheus text format).
#pragma once

#include <httplib.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/core/byte_budget.h"
#include "sandbox/core/slot_limiter.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/mcp/task_store.h"
#include "sandbox/metrics/metrics.h"
#include "sandbox/service/sandbox_service.h"
#include "sandbox/service/session_manager.h"
#include "sandbox/transport/streamable_http_transport.h"

namespace sandbox::server {

// What the probes read; everything must outlive the HTTP server.
struct ProbeSources {
  const service::SandboxService* service = nullptr;   // also the engines (its engines())
  const service::SessionManager* sessions = nullptr;  // null while sessions are off
  const transport::StreamableHttpTransport* streamable = nullptr;
  const SlotLimiter* stream_slots = nullptr;
  const mcp::TaskStore* tasks = nullptr;  // kept task results
  const ByteBudget* inflight = nullptr;   // memory.inflight_bytes
  const config::Config* config = nullptr;
  metrics::Metrics* metrics = nullptr;
  // Set once shutdown begins: /readyz answers 503 from then on.
  const std::atomic<bool>* draining = nullptr;
};

// One pool's readiness: it can serve while it has an idle sandbox, one starting, or its last
// start did not fail (a pool at max_total with every sandbox leased queues, it is not broken).
struct PoolReadiness {
  bool ready = false;
  std::string reason;
};
PoolReadiness ReadinessOf(const pool::PoolStats& stats);

// Both pool lists: one-shot pools and session pools ("<pool>/sessions").
std::vector<std::pair<std::string, pool::PoolStats>> AllPoolStats(const ProbeSources& sources);

// One engine's answer to a probe's ping.
struct EnginePing {
  const engine::ContainerEngine* engine = nullptr;
  Status status;
};
// Every engine pinged at once, 2 s each, in the service's order.
std::vector<EnginePing> PingEngines(const ProbeSources& sources);
// {"name": "reachable" or why not} of every engine.
nlohmann::json EnginesJson(const std::vector<EnginePing>& pings);

// The state a scrape renders, read off the sources.
metrics::Snapshot TakeSnapshot(const ProbeSources& sources, const std::vector<EnginePing>& pings);

// GET /healthz (healthz.cc) and GET /readyz (readyz.cc).
void RegisterHealthz(httplib::Server& server, const ProbeSources& sources);
void RegisterReadyz(httplib::Server& server, const ProbeSources& sources);

// All three probes, and the count of every HTTP answer by route, method and status.
void RegisterProbes(httplib::Server& server, const ProbeSources& sources);

}  // namespace sandbox::server
