#include "sandbox/metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "process_stats.h"

namespace sandbox::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;
using prometheus::MetricFamily;
using prometheus::MetricType;

double Seconds(std::chrono::microseconds us) { return static_cast<double>(us.count()) / 1e6; }

std::string_view KindName(RunKind kind) {
  return kind == RunKind::kSession ? "session" : "oneshot";
}

// Bucket layouts (seconds), from a print(1) in a warm sandbox to a run at its longest limit.
const Histogram::BucketBoundaries& RunBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                       2.5,   5,    10,    30,   60,  120,  300};
  return kBuckets;
}
const Histogram::BucketBoundaries& WaitBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25,
                                                       0.5,    1,     2.5,   5,    10,   30};
  return kBuckets;
}
const Histogram::BucketBoundaries& StartBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60};
  return kBuckets;
}
const Histogram::BucketBoundaries& EngineBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  return kBuckets;
}

// A family built at scrape time from a snapshot.
class Polled {
 public:
  Polled(std::string name, std::string help, MetricType type) {
    family_.name = std::move(name);
    family_.help = std::move(help);
    family_.type = type;
  }
  Polled& Add(std::vector<prometheus::ClientMetric::Label> labels, double value) {
    prometheus::ClientMetric metric;
    metric.label = std::move(labels);
    if (family_.type == MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family_.metric.push_back(std::move(metric));
    return *this;
  }
  MetricFamily Take() { return std::move(family_); }

 private:
  MetricFamily family_;
};

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& runs =
      BuildCounter()
          .Name("sandbox_runs_total")
          .Help(
              "Runs that reached a sandbox, by pool, pool mode, kind (oneshot or session) and "
              "verdict")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& run_errors =
      BuildCounter()
          .Name("sandbox_run_errors_total")
          .Help(
              "Runs refused or failed before they had a verdict, by kind and error code "
              "(busy, rate_limited, invalid_argument, unavailable, ...)")
          .Register(*registry);
  prometheus::Family<Histogram>& run_seconds =
      BuildHistogram()
          .Name("sandbox_run_duration_seconds")
          .Help("Whole run calls, waiting for a sandbox included, by pool, mode and kind")
          .Register(*registry);
  prometheus::Family<Histogram>& code_seconds =
      BuildHistogram()
          .Name("sandbox_run_code_duration_seconds")
          .Help("Time the code itself ran inside the sandbox, by pool, mode and kind")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& output_bytes =
      BuildCounter()
          .Name("sandbox_run_output_bytes_total")
          .Help("Bytes of stdout and stderr returned, by pool and stream")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& images =
      BuildCounter()
          .Name("sandbox_run_images_total")
          .Help("Figures (PNG images) returned, by pool")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& files = BuildCounter()
                                                       .Name("sandbox_run_files_total")
                                                       .Help("Output files returned, by pool")
                                                       .Register(*registry);
  prometheus::Family<Histogram>& acquire_seconds =
      BuildHistogram()
          .Name("sandbox_pool_acquire_wait_seconds")
          .Help("Time a run waited for a sandbox, by pool and result (ok or failed)")
          .Register(*registry);
  prometheus::Family<Histogram>& start_seconds =
      BuildHistogram()
          .Name("sandbox_pool_container_start_seconds")
          .Help("Time to start a sandbox container until it is ready, by pool and result")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& engine_calls =
      BuildCounter()
          .Name("sandbox_engine_requests_total")
          .Help("Docker Engine API requests, by engine, operation and HTTP status (0: no answer)")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& engine_runs =
      BuildCounter()
          .Name("sandbox_engine_runs_total")
          .Help("Runs that reached a sandbox, by the engine it ran on")
          .Register(*registry);
  prometheus::Family<Histogram>& engine_seconds =
      BuildHistogram()
          .Name("sandbox_engine_request_duration_seconds")
          .Help("Docker Engine API request latency, by engine and operation")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& http_requests =
      BuildCounter()
          .Name("sandbox_http_requests_total")
          .Help("HTTP requests answered, by route template, method and status")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& admin_changes =
      BuildCounter()
          .Name("sandbox_admin_changes_total")
          .Help("Live changes of pool settings, by pool, field and source (api or reload)")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& egress =
      BuildCounter()
          .Name("sandbox_egress_total")
          .Help(
              "What the egress proxies decided: connections (kind conn) and DNS queries (kind "
              "dns, all refused), by pool, engine and verdict (allowed or refused)")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& config_reloads =
      BuildCounter()
          .Name("sandbox_config_reloads_total")
          .Help("Configuration reloads (SIGHUP), by result (applied or rejected)")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& build_info =
      BuildGauge()
          .Name("sandbox_build_info")
          .Help("Always 1; the server's version in a label")
          .Register(*registry);
};

namespace {

// What the admin change and reload labels may hold: anything else is "other".
std::string Bounded(std::string_view value, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed) {
    if (value == a) return std::string(value);
  }
  return "other";
}

}  // namespace

Metrics::Metrics(MetricsOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->build_info.Add({{"version", options.version}}).Set(1);
}

Metrics::~Metrics() = default;

void Metrics::RecordRun(RunKind kind, std::string_view pool, std::string_view mode,
                        const exec::RunResult& result, std::chrono::microseconds took) {
  const std::string p(pool);
  const std::string m(mode);
  const std::string k(KindName(kind));
  impl_->runs
      .Add({{"pool", p},
            {"mode", m},
            {"kind", k},
            {"verdict", std::string(VerdictName(result.verdict))}})
      .Increment();
  impl_->run_seconds.Add({{"pool", p}, {"mode", m}, {"kind", k}}, RunBuckets())
      .Observe(Seconds(took));
  impl_->code_seconds.Add({{"pool", p}, {"mode", m}, {"kind", k}}, RunBuckets())
      .Observe(static_cast<double>(result.duration_ms) / 1000.0);
  impl_->output_bytes.Add({{"pool", p}, {"stream", "stdout"}})
      .Increment(static_cast<double>(result.stdout_text.size()));
  impl_->output_bytes.Add({{"pool", p}, {"stream", "stderr"}})
      .Increment(static_cast<double>(result.stderr_text.size()));
  impl_->images.Add({{"pool", p}}).Increment(static_cast<double>(result.images.size()));
  impl_->files.Add({{"pool", p}}).Increment(static_cast<double>(result.files.size()));
  if (!result.engine.empty()) impl_->engine_runs.Add({{"engine", result.engine}}).Increment();
}

void Metrics::RecordRunError(RunKind kind, ErrorCode code) {
  impl_->run_errors
      .Add({{"kind", std::string(KindName(kind))}, {"code", std::string(ErrorCodeName(code))}})
      .Increment();
}

void Metrics::RecordAcquire(std::string_view pool, bool ok, std::chrono::microseconds waited) {
  impl_->acquire_seconds
      .Add({{"pool", std::string(pool)}, {"result", ok ? "ok" : "failed"}}, WaitBuckets())
      .Observe(Seconds(waited));
}

void Metrics::RecordContainerStart(std::string_view pool, bool ok, std::chrono::microseconds took) {
  impl_->start_seconds
      .Add({{"pool", std::string(pool)}, {"result", ok ? "ok" : "failed"}}, StartBuckets())
      .Observe(Seconds(took));
}

void Metrics::RecordEngineCall(std::string_view engine, std::string_view operation, long status,
                               std::chrono::microseconds took) {
  const std::string e(engine);
  const std::string op(operation);
  impl_->engine_calls.Add({{"engine", e}, {"operation", op}, {"status", std::to_string(status)}})
      .Increment();
  impl_->engine_seconds.Add({{"engine", e}, {"operation", op}}, EngineBuckets())
      .Observe(Seconds(took));
}

void Metrics::RecordAdminChange(std::string_view pool, std::string_view field,
                                std::string_view source) {
  impl_->admin_changes
      .Add({{"pool", std::string(pool)},
            {"field", Bounded(field, {"min_idle", "max_total", "max_concurrent_starts", "limits",
                                      "autoscale", "network", "drain"})},
            {"source", Bounded(source, {"api", "reload"})}})
      .Increment();
}

void Metrics::RecordEgress(std::string_view pool, std::string_view engine, std::string_view kind,
                           std::string_view verdict) {
  impl_->egress
      .Add({{"pool", pool.empty() ? std::string("-") : std::string(pool)},
            {"engine", std::string(engine)},
            {"kind", Bounded(kind, {"conn", "dns"})},
            {"verdict", Bounded(verdict, {"allowed", "refused"})}})
      .Increment();
}

void Metrics::RecordConfigReload(std::string_view result) {
  impl_->config_reloads.Add({{"result", Bounded(result, {"applied", "rejected"})}}).Increment();
}

void Metrics::RecordHttpRequest(std::string_view route, std::string_view method, int status) {
  // A client picks the method token: only the standard ones get a label value of their own.
  static constexpr std::array<std::string_view, 7> kMethods = {"GET",  "POST",    "PUT",  "DELETE",
                                                               "HEAD", "OPTIONS", "PATCH"};
  const bool known = std::find(kMethods.begin(), kMethods.end(), method) != kMethods.end();
  impl_->http_requests
      .Add({{"route", std::string(route)},
            {"method", known ? std::string(method) : std::string("other")},
            {"status", std::to_string(status)}})
      .Increment();
}

std::string Metrics::Render(const Snapshot& now) const {
  std::vector<MetricFamily> families = impl_->registry->Collect();

  Polled sandboxes("sandbox_pool_sandboxes", "Sandboxes of each pool, by state", MetricType::Gauge);
  Polled waiting("sandbox_pool_waiting_requests", "Runs waiting for a sandbox of the pool",
                 MetricType::Gauge);
  Polled capacity("sandbox_pool_max_sandboxes", "The pool's max_total", MetricType::Gauge);
  Polled min_idle("sandbox_pool_min_idle", "The pool's min_idle as set", MetricType::Gauge);
  Polled target("sandbox_pool_min_idle_target",
                "The min_idle in effect: as set, or the autoscaler's target", MetricType::Gauge);
  Polled max_starts("sandbox_pool_max_concurrent_starts", "The pool's max_concurrent_starts",
                    MetricType::Gauge);
  Polled autoscaled("sandbox_pool_autoscaled", "1 when the autoscaler sets min_idle",
                    MetricType::Gauge);
  Polled draining("sandbox_pool_drain_remaining",
                  "Sandboxes the pool's latest drain still has to replace", MetricType::Gauge);
  Polled starts("sandbox_pool_container_starts_total",
                "Sandbox container starts, by pool and result", MetricType::Counter);
  Polled destroyed("sandbox_pool_containers_destroyed_total", "Sandbox containers removed",
                   MetricType::Counter);
  Polled timeouts("sandbox_pool_acquire_timeouts_total", "Runs that gave up waiting for a sandbox",
                  MetricType::Counter);
  Polled unhealthy("sandbox_pool_health_check_failures_total",
                   "Idle sandboxes that failed a health check", MetricType::Counter);
  for (const auto& pool : now.pools) {
    const std::array<std::pair<const char*, int>, 5> states = {{{"idle", pool.idle},
                                                                {"leased", pool.leased},
                                                                {"starting", pool.starting},
                                                                {"checking", pool.checking},
                                                                {"destroying", pool.destroying}}};
    for (const auto& [state, count] : states) {
      sandboxes.Add({{"mode", pool.mode}, {"pool", pool.name}, {"state", state}}, count);
    }
    waiting.Add({{"pool", pool.name}}, pool.waiting);
    capacity.Add({{"pool", pool.name}}, pool.max_total);
    min_idle.Add({{"pool", pool.name}}, pool.min_idle);
    target.Add({{"pool", pool.name}}, pool.min_idle_target);
    max_starts.Add({{"pool", pool.name}}, pool.max_concurrent_starts);
    autoscaled.Add({{"pool", pool.name}}, pool.autoscaled ? 1 : 0);
    draining.Add({{"pool", pool.name}}, pool.drain_remaining);
    starts.Add({{"pool", pool.name}, {"result", "ok"}}, static_cast<double>(pool.created_total));
    starts.Add({{"pool", pool.name}, {"result", "failed"}},
               static_cast<double>(pool.start_failures_total));
    destroyed.Add({{"pool", pool.name}}, static_cast<double>(pool.destroyed_total));
    timeouts.Add({{"pool", pool.name}}, static_cast<double>(pool.acquire_timeouts_total));
    unhealthy.Add({{"pool", pool.name}}, static_cast<double>(pool.health_check_failures_total));
  }
  for (Polled* p : {&sandboxes, &waiting, &capacity, &min_idle, &target, &max_starts, &autoscaled,
                    &draining, &starts, &destroyed, &timeouts, &unhealthy}) {
    families.push_back(p->Take());
  }
  if (now.sessions) {
    families.push_back(Polled("sandbox_sessions", "Sessions open", MetricType::Gauge)
                           .Add({}, now.sessions->active)
                           .Take());
    families.push_back(
        Polled("sandbox_sessions_created_total", "Sessions created", MetricType::Counter)
            .Add({}, static_cast<double>(now.sessions->created_total))
            .Take());
    families.push_back(Polled("sandbox_sessions_expired_total",
                              "Sessions ended by their idle timeout or lifetime",
                              MetricType::Counter)
                           .Add({}, static_cast<double>(now.sessions->expired_total))
                           .Take());
    families.push_back(Polled("sandbox_sessions_restarted_total",
                              "Session interpreters restarted empty after they died",
                              MetricType::Counter)
                           .Add({}, static_cast<double>(now.sessions->restarts_total))
                           .Take());
    families.push_back(Polled("sandbox_sessions_restored_total",
                              "Sessions adopted from an earlier server of this instance "
                              "(sessions.restart_grace_s)",
                              MetricType::Counter)
                           .Add({}, static_cast<double>(now.sessions->restored_total))
                           .Take());
  }
  families.push_back(
      Polled("sandbox_mcp_sessions", "MCP Streamable HTTP sessions open", MetricType::Gauge)
          .Add({}, static_cast<double>(now.mcp_sessions))
          .Take());
  families.push_back(
      Polled("sandbox_http_streams", "Response streams (SSE) open", MetricType::Gauge)
          .Add({}, static_cast<double>(now.streams_open))
          .Take());
  families.push_back(
      Polled("sandbox_http_max_streams", "Stream slots (server.max_streams)", MetricType::Gauge)
          .Add({}, static_cast<double>(now.stream_slots))
          .Take());
  if (now.task_results) {
    families.push_back(Polled("sandbox_task_result_bytes",
                              "Bytes of finished task results kept for tasks/get",
                              MetricType::Gauge)
                           .Add({}, static_cast<double>(now.task_results->bytes))
                           .Take());
    families.push_back(Polled("sandbox_task_result_max_bytes",
                              "The most bytes of task results kept (tasks.max_result_bytes)",
                              MetricType::Gauge)
                           .Add({}, static_cast<double>(now.task_results->max_bytes))
                           .Take());
    families.push_back(Polled("sandbox_task_results_evicted_total",
                              "Task results evicted, or not kept, to stay within their byte "
                              "bounds",
                              MetricType::Counter)
                           .Add({}, static_cast<double>(now.task_results->evicted_total))
                           .Take());
  }
  if (now.inflight_capacity > 0) {
    families.push_back(Polled("sandbox_inflight_bytes",
                              "Bytes held for clients now: answers being built and sent, bodies, "
                              "stream queues (memory.inflight_bytes)",
                              MetricType::Gauge)
                           .Add({}, static_cast<double>(now.inflight_bytes))
                           .Take());
    families.push_back(Polled("sandbox_inflight_capacity_bytes",
                              "The in-flight byte budget (memory.inflight_bytes)",
                              MetricType::Gauge)
                           .Add({}, static_cast<double>(now.inflight_capacity))
                           .Take());
    families.push_back(Polled("sandbox_inflight_peak_bytes",
                              "The most bytes held for clients at once since start",
                              MetricType::Gauge)
                           .Add({}, static_cast<double>(now.inflight_peak))
                           .Take());
    families.push_back(Polled("sandbox_inflight_refused_total",
                              "Reservations of the in-flight byte budget refused (a request "
                              "waited memory.inflight_wait_ms and failed)",
                              MetricType::Counter)
                           .Add({}, static_cast<double>(now.inflight_refused))
                           .Take());
  }
  {
    Polled up("sandbox_engine_up", "1 when the engine answered the scrape's ping, by engine",
              MetricType::Gauge);
    for (const auto& e : now.engines) up.Add({{"engine", e.name}}, e.up ? 1 : 0);
    families.push_back(up.Take());
  }
  if (!now.excluded.empty()) {
    Polled excluded("sandbox_engine_excluded",
                    "1 for an engine left out of a pool at start-up (its image is missing there, "
                    "or it did not answer); the log line says the command that fixes it",
                    MetricType::Gauge);
    for (const auto& x : now.excluded) excluded.Add({{"engine", x.engine}, {"pool", x.pool}}, 1);
    families.push_back(excluded.Take());
  }
  if (auto process = ReadProcessStats()) {
    auto gauge = [&families](const char* name, const char* help, double value) {
      families.push_back(Polled(name, help, MetricType::Gauge).Add({}, value).Take());
    };
    families.push_back(
        Polled("process_cpu_seconds_total", "User and system CPU time spent", MetricType::Counter)
            .Add({}, process->cpu_seconds)
            .Take());
    gauge("process_resident_memory_bytes", "Resident memory size",
          static_cast<double>(process->resident_bytes));
    gauge("process_virtual_memory_bytes", "Virtual memory size",
          static_cast<double>(process->virtual_bytes));
    gauge("process_threads", "OS threads", static_cast<double>(process->threads));
    gauge("process_open_fds", "Open file descriptors", static_cast<double>(process->open_fds));
    gauge("process_max_fds", "The open file descriptor limit",
          static_cast<double>(process->max_fds));
    gauge("process_start_time_seconds", "Start time since the Unix epoch",
          process->start_time_seconds);
  }
  if (auto heap = ReadHeapStats()) {
    families.push_back(Polled("sandbox_heap_bytes",
                              "The C allocator's memory: in_use (allocated), free (freed but "
                              "kept for reuse), arena (taken from the kernel for its arenas)",
                              MetricType::Gauge)
                           .Add({{"state", "in_use"}}, static_cast<double>(heap->in_use_bytes))
                           .Add({{"state", "free"}}, static_cast<double>(heap->free_bytes))
                           .Add({{"state", "arena"}}, static_cast<double>(heap->arena_bytes))
                           .Take());
  }

  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

std::string RouteOf(std::string_view path) {
  static constexpr std::array<std::string_view, 12> kExact = {
      "/mcp",          "/sse",     "/messages", "/eval",    "/v1/execute", "/v1/sessions",
      "/openapi.json", "/healthz", "/readyz",   "/metrics", "/",           "/admin/pools"};
  for (auto route : kExact) {
    if (path == route) return std::string(route);
  }
  constexpr std::string_view kAdminPools = "/admin/pools/";
  if (path.starts_with(kAdminPools)) {
    std::string_view rest = path.substr(kAdminPools.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return rest.empty() ? "other" : "/admin/pools/{name}";
    if (slash > 0 && rest.substr(slash) == "/drain") return "/admin/pools/{name}/drain";
    return "other";
  }
  constexpr std::string_view kSessions = "/v1/sessions/";
  if (path.starts_with(kSessions)) {
    std::string_view rest = path.substr(kSessions.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return rest.empty() ? "other" : "/v1/sessions/{id}";
    rest = rest.substr(slash);
    if (rest == "/files") return "/v1/sessions/{id}/files";
    if (rest.starts_with("/files/") && rest.size() > 7) return "/v1/sessions/{id}/files/{path}";
  }
  return "other";
}

}  // namespace sandbox::metrics
