// The server's Prometheus metrics: one owner of every metric name, label set and bucket layout,
// rendered in the text exposition format for GET /metrics. Built in main and handed to what
// records into it (the engine client's and the pools' hooks, the metered services, the HTTP
// request logger); nothing in the other layers knows prometheus-cpp.
//
// Events (runs, engine calls, starts, acquires, HTTP requests) are recorded as they happen;
// states (pool occupancy, open sessions and streams, the process's own figures) are read when
// a scrape renders (Snapshot). Labels only ever hold bounded sets: pool names from the
// configuration, verdicts, error codes, operation templates, route templates and statuses;
// never code, ids, paths of requests or token values.
// Thread-safety: every method from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/error.h"
#include "sandbox/exec/run_types.h"

namespace sandbox::metrics {

// Where a run came from: a one-shot run (its own sandbox lease) or a cell of a session.
enum class RunKind { kOneShot, kSession };

struct PoolSnapshot {
  std::string name;
  std::string mode;  // "recycle" or "fresh"
  int idle = 0;
  int leased = 0;
  int starting = 0;
  int checking = 0;
  int destroying = 0;
  int waiting = 0;
  int max_total = 0;
  int min_idle = 0;         // as set (configuration, admin API)
  int min_idle_target = 0;  // in effect: min_idle, or the autoscaler's target
  int max_concurrent_starts = 0;
  bool autoscaled = false;
  int drain_remaining = 0;  // sandboxes the latest drain still waits for
  std::uint64_t created_total = 0;
  std::uint64_t start_failures_total = 0;
  std::uint64_t destroyed_total = 0;
  std::uint64_t acquire_timeouts_total = 0;
  std::uint64_t health_check_failures_total = 0;
};

struct SessionSnapshot {
  int active = 0;
  std::uint64_t created_total = 0;
  std::uint64_t expired_total = 0;
  std::uint64_t restarts_total = 0;
  std::uint64_t restored_total = 0;  // adopted from an earlier server (restart grace)
};

// Finished task results kept for tasks/get (tasks.max_result_bytes).
struct KeptResultsSnapshot {
  std::int64_t bytes = 0;
  std::int64_t max_bytes = 0;
  std::uint64_t evicted_total = 0;
};

// One engine at a scrape: whether it answered the scrape's ping.
struct EngineSnapshot {
  std::string name;
  bool up = false;
};

// An engine left out of a pool at start-up (its image missing, or it was unreachable).
struct ExclusionSnapshot {
  std::string engine;
  std::string pool;
};

// What a scrape reads off the running server.
struct Snapshot {
  std::vector<PoolSnapshot> pools;
  std::optional<SessionSnapshot> sessions;  // nullopt while sessions are off
  std::size_t mcp_sessions = 0;             // Streamable HTTP transport sessions open
  std::size_t streams_open = 0;             // SSE streams holding a stream slot
  std::size_t stream_slots = 0;             // server.max_streams
  // Kept task results; nullopt without a task store.
  std::optional<KeptResultsSnapshot> task_results;
  std::vector<EngineSnapshot> engines;      // every connected engine, pinged by the scrape
  std::vector<ExclusionSnapshot> excluded;  // engines left out of pools at start-up
  // The in-flight byte budget (memory.inflight_bytes, docs/memory-budget.md).
  std::int64_t inflight_bytes = 0;     // held for clients now
  std::int64_t inflight_capacity = 0;  // the budget; 0: not reported
  std::int64_t inflight_peak = 0;      // the most held at once since start
  std::int64_t inflight_refused = 0;   // reservations refused since start
};

struct MetricsOptions {
  std::string version;  // sandbox_build_info{version}
};

class Metrics {
 public:
  explicit Metrics(MetricsOptions options);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A run that reached a sandbox (any verdict). `pool` and `mode` name where it ran; `took` is
  // the whole call (waiting for a sandbox included), result.duration_ms the code's own time.
  void RecordRun(RunKind kind, std::string_view pool, std::string_view mode,
                 const exec::RunResult& result, std::chrono::microseconds took);
  // A run refused or failed before it had a result (busy pool, rate limit, bad request...).
  void RecordRunError(RunKind kind, ErrorCode code);
  void RecordAcquire(std::string_view pool, bool ok, std::chrono::microseconds waited);
  void RecordContainerStart(std::string_view pool, bool ok, std::chrono::microseconds took);
  // `engine` a configured engine's name; `operation` a template (docker::OperationOf); status 0:
  // no answer.
  void RecordEngineCall(std::string_view engine, std::string_view operation, long status,
                        std::chrono::microseconds took);
  // `route` is a template (RouteOf below).
  void RecordHttpRequest(std::string_view route, std::string_view method, int status);
  // A live change of a pool setting: `field` one of min_idle, max_total, max_concurrent_starts,
  // limits, autoscale, drain; `source` "api" (the admin API) or "reload" (SIGHUP).
  void RecordAdminChange(std::string_view pool, std::string_view field, std::string_view source);
  // One decision of an egress proxy (docs/network.md): `kind` conn or dns, `verdict` allowed or
  // refused; `pool` and `engine` as configured ("" pool: an address no pool admitted).
  void RecordEgress(std::string_view pool, std::string_view engine, std::string_view kind,
                    std::string_view verdict);
  // A configuration reload: `result` "applied" or "rejected" (the running one was kept).
  void RecordConfigReload(std::string_view result);

  // The text exposition format (version 0.0.4) of every metric, `now` included.
  std::string Render(const Snapshot& now) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The route template of a request path, for the HTTP label: "/v1/sessions/{id}/files/{path}",
// "/mcp", ...; anything not served is "other" (so a scanner cannot grow the label set).
std::string RouteOf(std::string_view path);

// The content type of Render()'s output.
inline constexpr std::string_view kTextFormat = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace sandbox::metrics
