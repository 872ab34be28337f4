// The two ways this server is reached: MCP over stdin/stdout (--stdio), or HTTP (MCP, the
// HTTP API, the admin API and the probes behind the connection guard). Each serves until
// SIGINT/SIGTERM (or, for stdio, the end of input), reloading the configuration on SIGHUP.
#pragma once

#include <spdlog/logger.h>

#include <memory>

#include "sandbox/admin/config_reload.h"
#include "sandbox/admin/pool_tuner.h"
#include "sandbox/config/config.h"
#include "sandbox/core/byte_budget.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/task_store.h"
#include "sandbox/metrics/metrics.h"
#include "sandbox/service/sandbox_service.h"
#include "sandbox/service/session_manager.h"
#include "signals.h"

namespace sandbox::server {

// What both front ends serve with; built by main, everything outlives the front end.
struct FrontEnd {
  const config::Config& config;
  mcp::Dispatcher& dispatcher;
  admin::PoolTuner& tuner;  // the admin API and SIGHUP change the pools through it
  metrics::Metrics& metrics;
  // Bytes held for clients at once (memory.inflight_bytes, docs/memory-budget.md).
  ByteBudget& inflight;
  admin::ConfigReloader::Loader load_config;  // SIGHUP reads the configuration again with it
  const SignalWaiter& signals;
  std::shared_ptr<spdlog::logger> logger;
};

// What only HTTP serves: the HTTP API's runs and sessions, and what the probes read (the
// engines through the service).
struct HttpSources {
  exec::ExecutionService& runs;
  exec::SessionService* sessions = nullptr;  // null while sessions are off
  const service::SandboxService* service = nullptr;
  const service::SessionManager* session_manager = nullptr;  // null while sessions are off
  service::EngineControl* engines = nullptr;  // GET /admin/engines and the engines' drain
  const mcp::TaskStore* tasks = nullptr;      // its kept results are shown in /metrics
};

// Serves MCP on stdin/stdout until the input ends or a signal stops it (runs in flight are
// cancelled). Returns the exit code.
int ServeStdio(const FrontEnd& front);

// Serves HTTP on server.listen until SIGINT/SIGTERM; then refuses new work, cancels the runs
// in flight and returns once the server has stopped. Returns the exit code: 0, or 1 when it
// cannot listen.
int ServeHttp(const FrontEnd& front, const HttpSources& sources);

}  // namespace sandbox::server
