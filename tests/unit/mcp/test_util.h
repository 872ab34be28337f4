// Helpers for the MCP unit tests: an Outbound that records messages, and a dispatcher with the
// real run_python and sandbox_info tools over a FakeService (and, for session tests, the
// session tools and resources over a FakeSessionService).
#pragma once

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/run_python_tool.h"
#include "sandbox/mcp/sandbox_info_tool.h"
#include "sandbox/mcp/session_resources.h"
#include "sandbox/mcp/session_tools.h"
#include "support/fake_service.h"
#include "support/fake_session_service.h"

namespace sandbox::mcp::testing {

using json = nlohmann::json;

inline std::shared_ptr<spdlog::logger> NullLogger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

class RecordingOutbound final : public Outbound {
 public:
  void Send(const json& message) override {
    std::lock_guard lock(mu_);
    messages_.push_back(message);
    cv_.notify_all();
  }
  std::vector<json> messages() const {
    std::lock_guard lock(mu_);
    return messages_;
  }
  std::vector<json> WithMethod(const std::string& method) const {
    std::vector<json> out;
    for (const auto& m : messages()) {
      if (m.value("method", "") == method) out.push_back(m);
    }
    return out;
  }
  bool WaitFor(std::size_t n, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return messages_.size() >= n; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> messages_;
};

inline Dispatcher MakeDispatcher(sandbox::testing::FakeService& service, RelayOptions relay = {}) {
  ToolRegistry tools;
  RunPythonOptions options;
  options.relay = relay;
  tools.Add(std::make_unique<RunPythonTool>(service, options));
  tools.Add(std::make_unique<SandboxInfoTool>(service));
  return Dispatcher(ServerIdentity{}, std::move(tools), NullLogger());
}

// The server's set-up with sessions: run_python with sessions, sandbox_info, the session tools
// and the session resources.
inline Dispatcher MakeSessionDispatcher(sandbox::testing::FakeService& service,
                                        sandbox::testing::FakeSessionService& sessions,
                                        std::size_t page_size = 100,
                                        SessionToolOptions options = {}) {
  ToolRegistry tools;
  RunPythonOptions run_options;
  run_options.sessions = options;
  tools.Add(std::make_unique<RunPythonTool>(service, &sessions, run_options));
  tools.Add(std::make_unique<SandboxInfoTool>(service));
  for (auto& tool : MakeSessionTools(sessions, options)) tools.Add(std::move(tool));
  ResourceRegistry resources;
  resources.Add(
      std::make_unique<SessionResourceProvider>(sessions, SessionResourceOptions{page_size}));
  return Dispatcher(ServerIdentity{}, std::move(tools), std::move(resources), NullLogger());
}

inline json CallTool(const json& id, const std::string& name, json arguments) {
  return json{{"jsonrpc", "2.0"},
              {"id", id},
              {"method", "tools/call"},
              {"params", {{"name", name}, {"arguments", std::move(arguments)}}}};
}

inline json Request(const json& id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

inline json Notification(const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

inline json InitializeRequest(const std::string& version = "2025-11-25", json id = 0) {
  return Request(id, "initialize",
                 {{"protocolVersion", version},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
}

// The _meta a 2026-07-28 request carries: its version, the capabilities it declares and the
// client's identity.
inline json ModernMeta(json capabilities = json::object()) {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)},
          {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "1"}}}};
}

// A 2026-07-28 request: `params` with `meta` as its _meta.
inline json ModernRequest(const json& id, const std::string& method, json params = json::object(),
                          json meta = ModernMeta()) {
  params["_meta"] = std::move(meta);
  return Request(id, method, std::move(params));
}

inline json CallRunPython(const json& id, json arguments, json progress_token = nullptr) {
  json params = {{"name", "run_python"}, {"arguments", std::move(arguments)}};
  if (!progress_token.is_null()) params["_meta"] = {{"progressToken", progress_token}};
  return Request(id, "tools/call", std::move(params));
}

}  // namespace sandbox::mcp::testing
