// Dispatcher: MCP method handling, independent of any transport. A transport parses nothing
// itself beyond framing: it hands each JSON message (or a batch) with the client's Session and an
// Outbound for notifications, and sends back what Handle returns.
//
// Methods: initialize, ping, tools/list, tools/call, logging/setLevel, and with a resource
// provider resources/list, resources/templates/list and resources/read (the `resources`
// capability is announced only then; without one they are unknown methods); notifications
// notifications/initialized and notifications/cancelled. Requests before initialize (other than
// ping) and unknown methods get an error at once. Client responses are ignored (the server sends
// no requests).
//
// Thread-safety: Handle() may run on many threads at once, also for one session (a tools/call
// and the notifications/cancelled that stops it run concurrently).
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/mcp/outbound.h"
#include "sandbox/mcp/resource_provider.h"
#include "sandbox/mcp/session.h"
#include "sandbox/mcp/tool_registry.h"

namespace sandbox::mcp {

struct ServerIdentity {
  std::string name = "sandbox-mcp";
  std::string title = "Python sandbox";
  std::string version = "0.0.0";
  std::string instructions;  // sent in the initialize result when not empty
};

class Dispatcher {
 public:
  Dispatcher(ServerIdentity identity, ToolRegistry tools, std::shared_ptr<spdlog::logger> logger);
  Dispatcher(ServerIdentity identity, ToolRegistry tools, ResourceRegistry resources,
             std::shared_ptr<spdlog::logger> logger);

  // Handles one message (already parsed JSON, not an array). Returns the response of a request;
  // nullopt for notifications, client responses, and requests cancelled while they ran.
  std::optional<nlohmann::json> Handle(Session& session, const nlohmann::json& message,
                                       Outbound& out);

  // Handles a JSON-RPC batch: only when the session negotiated 2025-03-26, else one -32600
  // error. Members run one after another; their notifications go to `out`. Returns the array
  // of responses, nullopt when none.
  std::optional<nlohmann::json> HandleBatch(Session& session, const nlohmann::json& batch,
                                            Outbound& out);

  // Raw text: a parse error (-32700) or a single message or a batch.
  std::optional<nlohmann::json> HandleText(Session& session, std::string_view text, Outbound& out);

  // True for requests that may run long or send notifications (tools/call): transports run
  // them off their reading thread and give them a stream.
  static bool IsLongRunning(const nlohmann::json& message);

  const ToolRegistry& tools() const { return tools_; }
  const ResourceRegistry& resources() const { return resources_; }

 private:
  nlohmann::json HandleRequest(Session& session, const std::string& method,
                               const nlohmann::json& id, const nlohmann::json& params,
                               Outbound& out, bool& suppress);
  void HandleNotification(Session& session, const std::string& method,
                          const nlohmann::json& params);
  nlohmann::json Initialize(Session& session, const nlohmann::json& id,
                            const nlohmann::json& params);
  nlohmann::json CallTool(Session& session, const nlohmann::json& id, const nlohmann::json& params,
                          Outbound& out, bool& suppress);
  nlohmann::json HandleResources(Session& session, const std::string& method,
                                 const nlohmann::json& id, const nlohmann::json& params);

  const ServerIdentity identity_;
  const ToolRegistry tools_;
  const ResourceRegistry resources_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sandbox::mcp
