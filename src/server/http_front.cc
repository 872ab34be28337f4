// HTTP: the connection guard on the public port in front of cpp-httplib on an internal Unix
// socket only this user can reach, with every route on it (MCP, legacy SSE, the HTTP API, the admin
// API and the probes).
#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string_view>
#include <thread>

#include "front_end.h"
#include "probes.h"
#include "sandbox/admin/admin_api.h"
#include "sandbox/api/http_api.h"
#include "sandbox/core/slot_limiter.h"
#include "sandbox/http/connection_guard.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/server_setup.h"
#include "sandbox/transport/legacy_sse_transport.h"
#include "sandbox/transport/streamable_http_transport.h"
#include "startup.h"

namespace sandbox::server {
namespace {

http::ConnectionGuardOptions ConnectionGuardOptionsOf(const config::ServerConfig& server) {
  http::ConnectionGuardOptions options;
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
void RaiseDescriptorLimit(const config::ServerConfig& server,
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

void WarnIfHostsOpen(const config::ServerConfig& server, spdlog::logger& logger) {
  if (!http::IsLoopbackName(server.listen_host) && server.allowed_hosts.empty()) {
    logger.warn(
        "listening on {} but server.allowed_hosts is empty: requests whose Host header "
        "is not a loopback name get 403; list the names clients use",
        server.listen_host);
  }
}

}  // namespace

int ServeHttp(const FrontEnd& front, const HttpSources& sources) {
  const config::Config& config = front.config;
  const auto& logger = front.logger;
  WarnIfHostsOpen(config.server, *logger);
  // The public port: the connection guard reads each request under limits and forwards it to
  // cpp-httplib on an internal Unix socket in a private directory (http::InternalSocket).
  std::unique_ptr<http::ConnectionGuard> guarded_port;
  std::atomic<bool> draining{false};
  http::RequestGuard guard(http::GuardOptions{config.server.token,
                                              config.server.allowed_hosts,
                                              config.server.allowed_origins,
                                              {"/healthz", "/readyz"},
                                              config.server.tokens,
                                              config.server.admin_tokens});
  http::HttpServerOptions http_options;
  http_options.threads = config.server.http_threads;
  // A worker per stream slot on top of http_threads: open streams never starve other requests.
  http_options.stream_workers = config.server.max_streams;
  auto stream_slots =
      std::make_shared<SlotLimiter>(static_cast<std::size_t>(config.server.max_streams),
                                    static_cast<std::size_t>(config::StreamsPerPrincipal(config)));
  http_options.max_body_bytes = config.server.max_body_bytes;
  httplib::Server server;
  http::ConfigureHttpServer(server, http_options, guard);

  transport::HttpTransportOptions mcp_http;
  mcp_http.max_body_bytes = static_cast<std::size_t>(config.server.max_body_bytes);
  mcp_http.principal = guard.Resolver();
  mcp_http.stream_slots = stream_slots;
  // Every stream's queue: its own bound, and its bytes in the in-flight budget.
  const http::SseChannelLimits sse_queue{
      .max_queued_bytes = static_cast<std::size_t>(config.memory.stream_queue_bytes),
      .budget = &front.inflight};
  mcp_http.sse_queue = sse_queue;
  transport::StreamableHttpOptions streamable_options;
  streamable_options.http = mcp_http;
  streamable_options.sessions.max_sessions =
      static_cast<std::size_t>(config.server.max_mcp_sessions);
  streamable_options.sessions.max_sessions_per_principal =
      static_cast<std::size_t>(config::McpSessionsPerPrincipal(config));
  streamable_options.sessions.idle_ttl = config.server.mcp_session_idle_timeout;
  streamable_options.sessions.replica = config.server.replica;
  transport::StreamableHttpTransport streamable(front.dispatcher, streamable_options, logger);
  streamable.Register(server, "/mcp");
  transport::LegacySseOptions legacy_options;
  legacy_options.http = mcp_http;
  legacy_options.sessions.replica = config.server.replica;
  transport::LegacySseTransport legacy(front.dispatcher, legacy_options, logger);
  legacy.Register(server, "/sse", "/messages");
  api::ApiOptions api_options;
  api_options.version = SANDBOX_VERSION;
  api_options.principal = guard.Resolver();
  api_options.stream_slots = stream_slots;
  api_options.sse_queue = sse_queue;
  api_options.session_max_file_bytes = config.sessions.max_file_bytes;
  api_options.answers = {&front.inflight, config.memory.inflight_wait};
  api_options.eval_names_engine = config::EffectiveEngines(config.docker).size() > 1;
  api::HttpApi http_api(sources.runs, sources.sessions, api_options, logger);
  http_api.Register(server);  // /eval, /v1/execute, /v1/sessions, /openapi.json

  admin::AdminApiOptions admin_options;
  admin_options.principal = [&guard](std::string_view authorization) {
    return guard.AdminPrincipal(authorization);
  };
  admin_options.engines = sources.engines;
  admin::AdminApi admin_api(front.tuner, admin_options);
  admin_api.Register(server);  // /admin/pools...
  admin::ConfigReloader reloader(config, front.load_config, &guard, front.tuner, &front.metrics,
                                 logger);

  ProbeSources probes;
  probes.service = sources.service;
  probes.sessions = sources.session_manager;
  probes.streamable = &streamable;
  probes.stream_slots = stream_slots.get();
  probes.tasks = sources.tasks;
  probes.inflight = &front.inflight;
  probes.config = &config;
  probes.metrics = &front.metrics;
  probes.draining = &draining;
  RegisterProbes(server, probes);  // /healthz, /readyz, /metrics

  auto internal = http::InternalSocket::Bind(server, http::InternalSocketParent());
  if (!internal.ok()) return Fail(logger, internal.error());
  RaiseDescriptorLimit(config.server, logger);
  http::ConnectionGuardOptions guard_options = ConnectionGuardOptionsOf(config.server);
  guard_options.inflight = &front.inflight;  // request bodies reserve their bytes there
  auto listening =
      http::ConnectionGuard::Listen(config.server.listen_host, config.server.listen_port,
                                    (*internal)->path(), guard_options, logger);
  if (!listening.ok()) return Fail(logger, listening.error());
  guarded_port = std::move(*listening);

  std::atomic<bool> listen_returned{false};
  std::thread signal_thread([&] {
    const int received = front.signals.WaitForStop(reloader, *logger);
    logger->info("signal {} received, shutting down", received);
    draining.store(true);
    // Cancel the runs first: their streams then end, and stop() does not wait on them.
    streamable.Shutdown();
    legacy.Shutdown();
    http_api.Shutdown();
    guarded_port->Stop();
    http::StopListening(server, listen_returned);
  });
  std::thread front_thread([&] { guarded_port->Run(); });

  logger->info(
      "listening on http://{}:{} (MCP at /mcp, legacy SSE at /sse, HTTP API at /v1/execute, "
      "/v1/sessions and /eval; sessions {})",
      config.server.listen_host, guarded_port->port(), sources.sessions != nullptr ? "on" : "off");
  server.listen_after_bind();
  listen_returned.store(true);
  front_thread.join();
  logger->info("HTTP server stopped; stopping the pools");
  signal_thread.join();
  return 0;
}

}  // namespace sandbox::server
