// The MCP server this process offers: its tools, resources and instructions, from the
// configuration.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

#include "sandbox/config/config.h"
#include "sandbox/core/byte_budget.h"
#include "sandbox/core/result.h"
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
// `request_state_key` seals 2026-07-28 requestState (LoadRequestStateKey; "": random).
mcp::Dispatcher MakeDispatcher(const config::Config& config, exec::ExecutionService& service,
                               exec::SessionService* sessions, const Extensions& extensions,
                               mcp::TaskStore* tasks, ByteBudget& inflight,
                               std::string request_state_key,
                               const std::shared_ptr<spdlog::logger>& logger);

// The requestState key of server.request_state_key_file, read and checked now (start-up): ""
// when none is configured (the dispatcher then makes a random one); an error naming the key
// and the file when it cannot be used.
Result<std::string> LoadRequestStateKey(const config::Config& config);

}  // namespace sandbox::server
