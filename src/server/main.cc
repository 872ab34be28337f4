// sandbox-mcp: builds every component from the validated configuration and runs the server.
// Everything is constructed here and passed down; nothing is global.
#include <httplib.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "probes.h"
#include "sandbox/admin/admin_api.h"
#include "sandbox/admin/config_reload.h"
#include "sandbox/admin/pool_tuner.h"
#include "sandbox/api/http_api.h"
#include "sandbox/config/config.h"
#include "sandbox/core/memory_trim.h"
#include "sandbox/core/principal_quota.h"
#include "sandbox/core/slot_limiter.h"
#include "sandbox/docker/client.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/http/connection_guard.h"
#include "sandbox/http/legacy_sse_transport.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/server_setup.h"
#include "sandbox/http/streamable_http_transport.h"
#include "sandbox/logging/json_formatter.h"
#include "sandbox/logging/text_formatter.h"
#include "sandbox/mcp/conformance_tools.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/run_python_tool.h"
#include "sandbox/mcp/sandbox_info_tool.h"
#include "sandbox/mcp/session_resources.h"
#include "sandbox/mcp/session_tools.h"
#include "sandbox/mcp/stdio_transport.h"
#include "sandbox/mcp/task_store.h"
#include "sandbox/metrics/metered_services.h"
#include "sandbox/metrics/metrics.h"
#include "sandbox/policy/container_profile.h"
#include "sandbox/policy/run_filter.h"
#include "sandbox/service/audit_log.h"
#include "sandbox/service/engine.h"
#include "sandbox/service/fair_share.h"
#include "sandbox/service/sandbox_service.h"
#include "sandbox/service/session_manager.h"

#ifndef SANDBOX_SOURCE_POLICY_DIR
#define SANDBOX_SOURCE_POLICY_DIR "policies"
#endif

namespace {

using sandbox::Error;

extern "C" char** environ;

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

// A relative policy path is looked up in the working directory first, then in the source
// tree the binary was built from (so the server runs from any directory of a checkout).
std::filesystem::path ResolvePolicy(const std::string& configured) {
  std::filesystem::path path(configured);
  if (path.is_absolute() || std::filesystem::exists(path)) return path;
  std::filesystem::path fallback =
      std::filesystem::path(SANDBOX_SOURCE_POLICY_DIR).parent_path() / path;
  return std::filesystem::exists(fallback) ? fallback : path;
}

int Fail(const std::shared_ptr<spdlog::logger>& logger, const Error& error) {
  logger->critical("{}", error.ToString());
  return 1;
}

// --conformance-fixtures is a test-only switch (registers the official conformance suite's
// fixture tools); it is taken out here so the configuration's parser never sees it.
bool TakeFlag(std::vector<char*>& args, std::string_view flag) {
  bool found = false;
  for (auto it = args.begin(); it != args.end();) {
    if (*it != nullptr && flag == *it) {
      it = args.erase(it);
      found = true;
    } else {
      ++it;
    }
  }
  return found;
}

constexpr const char* kInstructions =
    "This server runs Python code in isolated, network-less sandboxes. Use run_python to "
    "compute, analyse data (numpy, pandas, scipy, sympy) and draw plots (matplotlib: every "
    "figure comes back as a PNG image). Use sandbox_info to see installed packages and limits.";

constexpr const char* kSessionInstructions =
    " For work over several steps, create a session with session_create and pass its "
    "session_id to run_python: variables, imports and files persist between calls. Upload "
    "inputs with session_upload_file, fetch outputs with session_download_file, and close the "
    "session with session_close when done.";

sandbox::mcp::SessionToolOptions SessionToolOptionsOf(const sandbox::config::Config& config) {
  sandbox::mcp::SessionToolOptions options;
  options.idle_timeout = config.sessions.idle_timeout;
  options.max_lifetime = config.sessions.max_lifetime;
  options.max_per_principal = config.sessions.max_per_principal;
  options.max_file_bytes = config.sessions.max_file_bytes;
  options.max_upload_bytes = config.sessions.max_upload_bytes;
  if (const auto* pool = sandbox::config::FindPool(config, config.default_pool)) {
    options.default_timeout_s = pool->limits.timeout_s;
    options.max_timeout_s = pool->max_limits.timeout_s;
    options.memory_bytes = pool->limits.memory_bytes;
    options.max_memory_bytes = pool->max_limits.memory_bytes;
    options.output_bytes = pool->limits.output_bytes;
  }
  return options;
}

// `sessions` may be null (sessions disabled): then no session tools and no resources.
sandbox::mcp::Dispatcher MakeDispatcher(const sandbox::config::Config& config,
                                        sandbox::exec::ExecutionService& service,
                                        sandbox::exec::SessionService* sessions,
                                        bool conformance_fixtures, sandbox::mcp::TaskStore* tasks,
                                        const std::shared_ptr<spdlog::logger>& logger) {
  sandbox::mcp::RunPythonOptions run_options;
  if (const auto* pool = sandbox::config::FindPool(config, config.default_pool)) {
    run_options.default_timeout_s = pool->limits.timeout_s;
    run_options.max_timeout_s = pool->max_limits.timeout_s;
    run_options.memory_bytes = pool->limits.memory_bytes;
    run_options.output_bytes = pool->limits.output_bytes;
  }
  run_options.sessions = SessionToolOptionsOf(config);
  // The default pool first: it is the one a call without `pool` runs in.
  for (const auto& pool : config.pools) {
    sandbox::mcp::PoolChoice choice{pool.name, pool.packages};
    choice.adds.insert(choice.adds.end(), pool.pip_packages.begin(), pool.pip_packages.end());
    auto at =
        pool.name == config.default_pool ? run_options.pools.begin() : run_options.pools.end();
    run_options.pools.insert(at, std::move(choice));
  }
  sandbox::mcp::ToolRegistry tools;
  tools.Add(std::make_unique<sandbox::mcp::RunPythonTool>(service, sessions, run_options));
  tools.Add(std::make_unique<sandbox::mcp::SandboxInfoTool>(service));
  sandbox::mcp::ResourceRegistry resources;
  if (sessions != nullptr) {
    for (auto& tool : sandbox::mcp::MakeSessionTools(*sessions, run_options.sessions)) {
      tools.Add(std::move(tool));
    }
    resources.Add(std::make_unique<sandbox::mcp::SessionResourceProvider>(*sessions));
  }
  if (conformance_fixtures) {
    logger->warn(
        "--conformance-fixtures: registering the conformance suite's test tools and resources");
    for (auto& tool : sandbox::mcp::MakeConformanceTools()) tools.Add(std::move(tool));
    resources.Add(sandbox::mcp::MakeConformanceResources());
  }
  sandbox::mcp::ServerIdentity identity;
  identity.version = SANDBOX_VERSION;
  identity.instructions = kInstructions;
  if (sessions != nullptr) identity.instructions += kSessionInstructions;
  return sandbox::mcp::Dispatcher(identity, std::move(tools), std::move(resources), logger, tasks);
}

sandbox::http::ConnectionGuardOptions ConnectionGuardOptionsOf(
    const sandbox::config::ServerConfig& server) {
  sandbox::http::ConnectionGuardOptions options;
  options.head.max_head_bytes = static_cast<std::size_t>(server.max_header_bytes);
  options.head.max_headers = static_cast<std::size_t>(server.max_headers);
  options.head.max_body_bytes = server.max_body_bytes;
  options.head_timeout = server.header_timeout;
  options.body_timeout = server.body_timeout;
  options.idle_timeout = server.idle_timeout;
  options.max_connections = server.max_connections;
  options.max_connections_per_ip = server.max_connections_per_ip;
  return options;
}

// Each client connection takes a descriptor, and two more (both ends of the internal
// connection) while its request is served: the soft limit is raised to fit, up to the hard one.
void RaiseDescriptorLimit(const sandbox::config::ServerConfig& server,
                          const std::shared_ptr<spdlog::logger>& logger) {
  const auto needed = static_cast<rlim_t>(server.max_connections) * 3 + 1024;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
  limit.rlim_cur = std::min(needed, limit.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < needed) {
    logger->warn(
        "the descriptor limit ({}) is below what server.max_connections = {} needs ({}); "
        "connections beyond it wait in the listen backlog",
        limit.rlim_cur, server.max_connections, needed);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Few arenas: freed result buffers are reused across threads and trimmed (MemoryTrimmer).
  sandbox::MemoryTrimmer::LimitArenas(4);
  std::vector<char*> args(argv, argv + argc);
  const bool conformance_fixtures = TakeFlag(args, "--conformance-fixtures");
  auto parsed =
      sandbox::config::ParseCommandLine(static_cast<int>(args.size()), args.data(), Environment());
  if (!parsed.ok()) {
    std::cerr << "sandbox-mcp: " << parsed.error().message() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << sandbox::config::UsageText()
              << "  --conformance-fixtures  register the MCP conformance suite's test tools "
                 "(testing only)\n";
    return 0;
  }
  if (parsed->version) {
    std::cout << "sandbox-mcp " << SANDBOX_VERSION << "\n";
    return 0;
  }
  const sandbox::config::Config config = std::move(parsed->config);

  // Logs go to stderr: with --stdio, stdout carries the protocol.
  auto logger = spdlog::stderr_color_mt("sandbox-mcp");
  logger->set_level(spdlog::level::from_str(config.log_level));
  if (config.log_format == "json") {
    logger->set_formatter(std::make_unique<sandbox::logging::JsonFormatter>());
  } else {
    logger->set_formatter(sandbox::logging::MakeTextFormatter());
  }
  if (auto valid = sandbox::config::Validate(config); !valid.ok())
    return Fail(logger, valid.error());

  // Handle termination signals and SIGHUP (reload) on one thread (sigwait), so no other thread
  // is interrupted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that vanishes must not kill the server

  auto profile =
      sandbox::policy::ContainerProfile::LoadFile(ResolvePolicy(config.policy.container_seccomp));
  if (!profile.ok()) return Fail(logger, profile.error());
  auto run_filter = sandbox::policy::RunFilter::LoadFile(ResolvePolicy(config.policy.run_seccomp));
  if (!run_filter.ok()) return Fail(logger, run_filter.error());

  sandbox::docker::CurlGlobal curl;
  sandbox::docker::ClientOptions client_options;
  client_options.transport.host = config.docker.host;
  if (!config.docker.tls_ca.empty()) {
    client_options.transport.tls = sandbox::docker::TlsOptions{
        config.docker.tls_ca, config.docker.tls_cert, config.docker.tls_key, true};
  }
  client_options.call_timeout = config.docker.call_timeout;
  // Every metric is recorded here (no global registry); /metrics renders it.
  sandbox::metrics::Metrics metrics(sandbox::metrics::MetricsOptions{SANDBOX_VERSION});
  client_options.on_call = [&metrics](const sandbox::docker::EngineCall& call) {
    metrics.RecordEngineCall(call.operation, call.status, call.took);
  };
  auto client = sandbox::docker::Client::Connect(curl, client_options);
  if (!client.ok()) {
    return Fail(logger, client.error().WithContext("cannot reach the Docker engine at " +
                                                   config.docker.host));
  }
  logger->info("Docker engine at {} (API {})", config.docker.host,
               (*client)->api_version().ToString());

  // Every container is labelled with this process as its owner; at start-up only containers
  // of the instance whose owner is provably gone are removed (a live server's are kept).
  auto self = sandbox::service::DetectOwner(**client);
  if (!self.ok()) return Fail(logger, self.error());
  logger->debug("owner label of this server's containers: {}",
                sandbox::service::FormatOwner(*self));
  sandbox::service::SweepOptions sweep;
  sweep.instance_id = config.instance_id;
  sweep.self = *self;
  sweep.engine_local = config.docker.host.rfind("unix://", 0) == 0;
  sweep.unlabelled_max_life = sandbox::service::LeftoverMaxLife(config);
  // Session containers of an earlier run are adopted below rather than removed (README,
  // "Upgrades keep sessions").
  sweep.keep_sessions = config.sessions.enabled && config.sessions.restart_grace.count() > 0;
  auto leftovers = sandbox::service::SweepLeftovers(
      **client, sweep, sandbox::service::SystemOwnerProbe(**client), logger);
  if (!leftovers.ok()) return Fail(logger, leftovers.error());

  sandbox::service::ServiceOptions service_options;
  service_options.container_labels[std::string(sandbox::service::kOwnerLabel)] =
      sandbox::service::FormatOwner(*self);
  service_options.container_seccomp_json = profile->compact_json();
  service_options.run_filter_bpf = run_filter->bpf();
  service_options.pool_hooks = [&metrics](const std::string& pool) {
    sandbox::pool::PoolHooks hooks;
    hooks.start_finished = [&metrics, pool](bool ok, std::chrono::microseconds took) {
      metrics.RecordContainerStart(pool, ok, took);
    };
    hooks.acquire_finished = [&metrics, pool](bool ok, std::chrono::microseconds waited) {
      metrics.RecordAcquire(pool, ok, waited);
    };
    return hooks;
  };
  // Stateful sessions, behind the exec::SessionService interface; null while sessions are off
  // (sessions.enabled false), and then no session tool, resource or route is offered.
  auto engine = sandbox::service::Engine::Start(config, **client, service_options,
                                                leftovers->left_sessions, logger);
  if (!engine.ok()) return Fail(logger, engine.error());
  sandbox::service::SandboxService& service = (*engine)->service();
  sandbox::service::SessionManager* session_manager = (*engine)->sessions();
  sandbox::exec::SessionService* sessions = session_manager;
  // Sessions end (their containers go) before the pools they came from stop; with
  // sessions.restart_grace_s their containers are left running for the next server instead.
  const char* stopped_line =
      session_manager != nullptr && config.sessions.restart_grace.count() > 0
          ? "stopped; all sandbox containers removed but those of sessions, left running for the "
            "next server "
            "(sessions.restart_grace_s)"
          : "stopped; all sandbox containers removed";
  auto shutdown_engine = [&] { (*engine)->Shutdown(); };

  // Freed result buffers go back to the kernel, so one large result leaves no lasting growth.
  sandbox::MemoryTrimmer trimmer;

  // Fair sharing between principals in front of every run (per_principal.*).
  sandbox::PrincipalQuota quota(sandbox::FairShareOptions{config.per_principal.max_concurrent_runs,
                                                          config.per_principal.runs_per_minute});
  sandbox::service::FairShareRuns fair_runs(service, quota);
  std::optional<sandbox::service::FairShareSessions> fair_sessions;
  if (sessions != nullptr) sessions = &fair_sessions.emplace(*sessions, quota);
  // Outermost, so refusals of the fair share are counted too.
  sandbox::metrics::PoolModes pool_modes;
  for (const auto& pc : config.pools) {
    pool_modes[pc.name] = sandbox::config::PoolModeName(pc.mode);
  }
  sandbox::metrics::MeteredRuns metered_runs(fair_runs, metrics, pool_modes);
  std::optional<sandbox::metrics::MeteredSessions> metered_sessions;
  if (sessions != nullptr) sessions = &metered_sessions.emplace(*sessions, metrics);
  // One audit line per run, refusals included (the logger "audit", same sinks and format).
  const sandbox::service::AuditOptions audit_options{std::move(pool_modes), config.default_pool,
                                                     config.log_run_code};
  auto audit_logger = logger->clone("audit");
  sandbox::service::AuditedRuns runs(metered_runs, audit_options, audit_logger);
  std::optional<sandbox::service::AuditedSessions> audited_sessions;
  if (sessions != nullptr) {
    sessions = &audited_sessions.emplace(*sessions, audit_options, audit_logger);
  }

  // Tasks of the MCP tasks extension (2026-07-28): runs that outlive their request. Shut down
  // before the dispatcher's tools and the services they use go away.
  sandbox::mcp::TaskStore tasks(sandbox::mcp::TaskOptions{}, logger);
  sandbox::mcp::Dispatcher dispatcher =
      MakeDispatcher(config, runs, sessions, conformance_fixtures, &tasks, logger);

  // Live tuning of the pools: the admin API and SIGHUP both change them through the tuner.
  sandbox::admin::PoolTuner tuner(service, &metrics, logger);
  // SIGHUP reads the same file and command line again.
  auto load_config = [args]() -> sandbox::Result<sandbox::config::Config> {
    auto again = sandbox::config::ParseCommandLine(static_cast<int>(args.size()), args.data(),
                                                   Environment());
    if (!again.ok()) return again.error();
    return std::move(again->config);
  };
  // Waits for signals: SIGHUP reloads and waits on; SIGINT/SIGTERM return.
  auto wait_for_stop = [&signals, &logger](sandbox::admin::ConfigReloader& reloader) {
    int received = 0;
    while (true) {
      sigwait(&signals, &received);
      if (received != SIGHUP) return received;
      logger->info("SIGHUP received, reloading the configuration");
      reloader.Reload();
    }
  };

  if (config.server.stdio) {
    sandbox::mcp::StdioOptions stdio_options;
    stdio_options.max_message_bytes = static_cast<std::size_t>(config.server.max_body_bytes);
    sandbox::mcp::StdioTransport stdio(dispatcher, stdio_options, logger);
    std::atomic<bool> input_closed{false};
    sandbox::admin::ConfigReloader reloader(config, load_config, nullptr, tuner, &metrics, logger);
    std::thread signal_thread([&] {
      const int received = wait_for_stop(reloader);
      if (input_closed.load()) return;
      logger->info("signal {} received, cancelling runs and shutting down", received);
      stdio.Stop();
    });
    logger->info("serving MCP on stdin/stdout");
    stdio.Run(STDIN_FILENO, STDOUT_FILENO);
    input_closed.store(true);
    // SIGTERM is blocked everywhere; this only wakes the sigwait of the signal thread.
    // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread)
    pthread_kill(signal_thread.native_handle(), SIGTERM);
    signal_thread.join();
    tasks.Shutdown();
    shutdown_engine();
    logger->info("{}", stopped_line);
    return 0;
  }

  if (!sandbox::http::IsLoopbackName(config.server.listen_host) &&
      config.server.allowed_hosts.empty()) {
    logger->warn(
        "listening on {} but server.allowed_hosts is empty: requests whose Host header "
        "is not a loopback name get 403; list the names clients use",
        config.server.listen_host);
  }
  // The public port: the connection guard reads each request under limits and forwards it to
  // cpp-httplib on an internal loopback port, which serves the guard's connections only.
  std::unique_ptr<sandbox::http::ConnectionGuard> front;
  std::atomic<bool> draining{false};
  sandbox::http::RequestGuard guard(sandbox::http::GuardOptions{config.server.token,
                                                                config.server.allowed_hosts,
                                                                config.server.allowed_origins,
                                                                {"/healthz", "/readyz"},
                                                                config.server.tokens,
                                                                config.server.admin_tokens});
  sandbox::http::HttpServerOptions http_options;
  http_options.threads = config.server.http_threads;
  // A worker per stream slot on top of http_threads: open streams never starve other requests.
  http_options.stream_workers = config.server.max_streams;
  auto stream_slots = std::make_shared<sandbox::SlotLimiter>(
      static_cast<std::size_t>(config.server.max_streams),
      static_cast<std::size_t>(sandbox::config::StreamsPerPrincipal(config)));
  http_options.max_body_bytes = config.server.max_body_bytes;
  http_options.peer_allowed = [&front](std::string_view addr, int port) {
    return front != nullptr && front->IsGuardPeer(addr, port);
  };
  httplib::Server http;
  sandbox::http::ConfigureHttpServer(http, http_options, guard);

  sandbox::http::StreamableHttpOptions streamable_options;
  streamable_options.max_body_bytes = static_cast<std::size_t>(config.server.max_body_bytes);
  streamable_options.principal = guard.Resolver();
  streamable_options.stream_slots = stream_slots;
  streamable_options.max_sessions = static_cast<std::size_t>(config.server.max_mcp_sessions);
  streamable_options.max_sessions_per_principal =
      static_cast<std::size_t>(sandbox::config::McpSessionsPerPrincipal(config));
  streamable_options.session_idle_ttl = config.server.mcp_session_idle_timeout;
  sandbox::http::StreamableHttpTransport streamable(dispatcher, streamable_options, logger);
  streamable.Register(http, "/mcp");
  sandbox::http::LegacySseOptions legacy_options;
  legacy_options.max_body_bytes = static_cast<std::size_t>(config.server.max_body_bytes);
  legacy_options.principal = guard.Resolver();
  legacy_options.stream_slots = stream_slots;
  sandbox::http::LegacySseTransport legacy(dispatcher, legacy_options, logger);
  legacy.Register(http, "/sse", "/messages");
  sandbox::api::ApiOptions api_options;
  api_options.version = SANDBOX_VERSION;
  api_options.principal = guard.Resolver();
  api_options.stream_slots = stream_slots;
  api_options.session_max_file_bytes = config.sessions.max_file_bytes;
  sandbox::api::HttpApi http_api(runs, sessions, api_options, logger);
  http_api.Register(http);  // /eval, /v1/execute, /v1/sessions, /openapi.json

  sandbox::admin::AdminApiOptions admin_options;
  admin_options.principal = [&guard](std::string_view authorization) {
    return guard.AdminPrincipal(authorization);
  };
  sandbox::admin::AdminApi admin_api(tuner, admin_options);
  admin_api.Register(http);  // /admin/pools...
  sandbox::admin::ConfigReloader reloader(config, load_config, &guard, tuner, &metrics, logger);

  sandbox::server::ProbeSources probes;
  probes.client = client->get();
  probes.service = &service;
  probes.sessions = session_manager;
  probes.streamable = &streamable;
  probes.stream_slots = stream_slots.get();
  probes.config = &config;
  probes.metrics = &metrics;
  probes.draining = &draining;
  sandbox::server::RegisterProbes(http, probes);  // /healthz, /readyz, /metrics

  const int internal_port = sandbox::http::BindServer(http, "127.0.0.1", 0);
  if (internal_port < 0) {
    logger->critical("cannot listen on an internal loopback port");
    return 1;
  }
  RaiseDescriptorLimit(config.server, logger);
  auto listening = sandbox::http::ConnectionGuard::Listen(
      config.server.listen_host, config.server.listen_port, internal_port,
      ConnectionGuardOptionsOf(config.server), logger);
  if (!listening.ok()) return Fail(logger, listening.error());
  front = std::move(*listening);

  std::thread signal_thread([&] {
    const int received = wait_for_stop(reloader);
    logger->info("signal {} received, shutting down", received);
    draining.store(true);
    // Cancel the runs first: their streams then end, and stop() does not wait on them.
    streamable.Shutdown();
    tasks.Shutdown();
    legacy.Shutdown();
    http_api.Shutdown();
    front->Stop();
    http.stop();
  });
  std::thread front_thread([&] { front->Run(); });

  logger->info(
      "listening on http://{}:{} (MCP at /mcp, legacy SSE at /sse, HTTP API at /v1/execute, "
      "/v1/sessions and /eval; sessions {})",
      config.server.listen_host, front->port(), sessions != nullptr ? "on" : "off");
  http.listen_after_bind();
  front_thread.join();
  logger->info("HTTP server stopped; stopping the pools");

  signal_thread.join();
  shutdown_engine();
  logger->info("{}", stopped_line);
  return 0;
}
