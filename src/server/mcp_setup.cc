#include "mcp_setup.h"

#include <string>
#include <utility>

#include "sandbox/mcp/request_state.h"
#include "sandbox/mcp/run_python_tool.h"
#include "sandbox/mcp/sandbox_info_tool.h"
#include "sandbox/mcp/session_resources.h"
#include "sandbox/mcp/session_tools.h"

namespace sandbox::server {
namespace {

constexpr const char* kInstructions =
    "This server runs Python code in isolated, network-less sandboxes. Use run_python to "
    "compute, analyse data (numpy, pandas, scipy, sympy) and draw plots (matplotlib: every "
    "figure comes back as a PNG image). Use sandbox_info to see installed packages and limits.";

constexpr const char* kSessionInstructions =
    " For work over several steps, create a session with session_create and pass its "
    "session_id to run_python: variables, imports and files persist between calls. Upload "
    "inputs with session_upload_file, fetch outputs with session_download_file, and close the "
    "session with session_close when done.";

mcp::SessionToolOptions SessionToolOptionsOf(const config::Config& config) {
  mcp::SessionToolOptions options;
  options.idle_timeout = config.sessions.idle_timeout;
  options.max_lifetime = config.sessions.max_lifetime;
  options.max_per_principal = config.sessions.max_per_principal;
  options.max_file_bytes = config.sessions.max_file_bytes;
  options.max_upload_bytes = config.sessions.max_upload_bytes;
  if (const auto* pool = config::FindPool(config, config.default_pool)) {
    options.default_timeout_s = pool->limits.timeout_s;
    options.max_timeout_s = pool->max_limits.timeout_s;
    options.memory_bytes = pool->limits.memory_bytes;
    options.max_memory_bytes = pool->max_limits.memory_bytes;
    options.output_bytes = pool->limits.output_bytes;
  }
  return options;
}

}  // namespace

mcp::TaskOptions TaskOptionsOf(const config::Config& config) {
  const config::TasksConfig& t = config.tasks;
  mcp::TaskOptions options;
  options.ttl = t.ttl;
  options.poll_interval = t.poll_interval;
  options.max_running_per_principal = static_cast<std::size_t>(t.max_running_per_principal);
  options.max_per_principal = static_cast<std::size_t>(t.max_per_principal);
  options.max_running = static_cast<std::size_t>(t.max_running);
  options.live_output_bytes = static_cast<std::size_t>(t.live_output_bytes);
  options.max_result_bytes_per_principal = t.max_result_bytes_per_principal;
  options.max_result_bytes = t.max_result_bytes;
  options.replica = config.server.replica;
  return options;
}

Result<std::string> LoadRequestStateKey(const config::Config& config) {
  const std::string& path = config.server.request_state_key_file;
  if (path.empty()) return std::string();
  auto key = mcp::ReadRequestStateKey(path);
  if (!key.ok()) return key.error().WithContext("server.request_state_key_file");
  return key;
}

mcp::Dispatcher MakeDispatcher(const config::Config& config, exec::ExecutionService& service,
                               exec::SessionService* sessions, const Extensions& extensions,
                               mcp::TaskStore* tasks, ByteBudget& inflight,
                               std::string request_state_key,
                               const std::shared_ptr<spdlog::logger>& logger) {
  mcp::RunPythonOptions run_options;
  run_options.answers = {&inflight, config.memory.inflight_wait};
  if (const auto* pool = config::FindPool(config, config.default_pool)) {
    run_options.default_timeout_s = pool->limits.timeout_s;
    run_options.max_timeout_s = pool->max_limits.timeout_s;
    run_options.memory_bytes = pool->limits.memory_bytes;
    run_options.output_bytes = pool->limits.output_bytes;
  }
  run_options.sessions = SessionToolOptionsOf(config);
  // The default pool first: it is the one a call without `pool` runs in.
  for (const auto& pool : config.pools) {
    mcp::PoolChoice choice{pool.name, pool.packages, config::DescribeNetworkPolicy(pool.network)};
    choice.adds.insert(choice.adds.end(), pool.pip_packages.begin(), pool.pip_packages.end());
    auto at =
        pool.name == config.default_pool ? run_options.pools.begin() : run_options.pools.end();
    run_options.pools.insert(at, std::move(choice));
  }
  mcp::ToolRegistry tools;
  tools.Add(std::make_unique<mcp::RunPythonTool>(service, sessions, run_options));
  tools.Add(std::make_unique<mcp::SandboxInfoTool>(service));
  mcp::ResourceRegistry resources;
  if (sessions != nullptr) {
    for (auto& tool : mcp::MakeSessionTools(*sessions, run_options.sessions)) {
      tools.Add(std::move(tool));
    }
    resources.Add(std::make_unique<mcp::SessionResourceProvider>(*sessions));
  }
  if (extensions.add_to_mcp) {
    logger->warn("a test server: registering its fixture tools and resources beside the product's");
    extensions.add_to_mcp(tools, resources);
  }
  mcp::ServerIdentity identity;
  identity.version = SANDBOX_VERSION;
  identity.instructions = kInstructions;
  if (sessions != nullptr) identity.instructions += kSessionInstructions;
  return mcp::Dispatcher(identity, std::move(tools), std::move(resources), logger, tasks,
                         std::move(request_state_key));
}

}  // namespace sandbox::server
