// The MCP server this process offers: its tools, resources and instructions, from the
// configuration.
#pragma once

#include <spdlog/logger.h>

#include <memory>

#include "sandbox/config/config.h"
#include "sandbox/core/byte_budget.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/task_store.h"
#include "sandbox/server/server.h"

namespace sandbox::server {

// The task store's options from config.tasks.
mcp::TaskOptions TaskOptionsOf(const config::Config& config);

// run_python and sandbox_info; with `sessions` (null: sessions disabled) the session tools and
// resources too; then what `extensions` add (a test server's fixtures). run_python's answers
// are reserved in `inflight` (memory.inflight_bytes), which must outlive the dispatcher.
mcp::Dispatcher MakeDispatcher(const config::Config& config, exec::ExecutionService& service,
                               exec::SessionService* sessions, const Extensions& extensions,
                               mcp::TaskStore* tasks, ByteBudget& inflight,
                               const std::shared_ptr<spdlog::logger>& logger);

}  // namespace sandbox::server
