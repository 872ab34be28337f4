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
// The 2026-07-28 era has its own entry, HandleModern: no initialize, every request carries its
// version and capabilities in params._meta, and results carry resultType, the server's identity
// in _meta and, on lists and reads, caching hints (ttlMs, cacheScope). Removed methods
// (initialize, ping, logging/setLevel, resources/subscribe) are unknown there.
//
// One source file per era: dispatcher_2025_11_25.cc (initialize, sessions, batches; versions
// 2024-11-05 to 2025-11-25) and dispatcher_2026_07_28.cc (HandleModern, CheckModern, tasks);
// dispatcher.cc holds what both use (Route, CallTool, the resources methods).
//
// Thread-safety: Handle() may run on many threads at once, also for one session (a tools/call
// and the notifications/cancelled that stops it run concurrently).
#pragma once

#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/outbound.h"
#include "sandbox/mcp/request_meta.h"
#include "sandbox/mcp/request_state.h"
#include "sandbox/mcp/resource_provider.h"
#include "sandbox/mcp/session.h"
#include "sandbox/mcp/task_store.h"
#include "sandbox/mcp/tool_registry.h"

namespace sandbox::mcp {

struct ServerIdentity {
  std::string name = "sandbox-mcp";
  std::string title = "Python sandbox";
  std::string version = "0.0.0";
  std::string instructions;  // sent in the initialize result when not empty
};

// What Dispatcher::CheckModern finds in a 2026-07-28 message before any work.
struct ModernCheck {
  // The error to answer instead of serving the message; nullopt: serve it.
  std::optional<nlohmann::json> refusal;
  // The refusal's HTTP status on Streamable HTTP: 400 for a malformed request (its envelope,
  // _meta or version, or a capability it needs and did not declare), 404 for an unknown method,
  // 200 for an error about the call itself (an unknown tool, arguments that are no object),
  // which is an answer like any other.
  int http_status = 200;
  // The request's _meta, read once here: set for a request that passed.
  std::optional<RequestMeta> meta;
};

class Dispatcher {
 public:
  Dispatcher(ServerIdentity identity, ToolRegistry tools, std::shared_ptr<spdlog::logger> logger);
  // `tasks`: the store of the tasks extension (nullptr: no tasks; the extension is then not
  // announced and tasks/* are unknown methods). It must outlive the dispatcher's use, and be
  // shut down before the tools are destroyed. `request_state_key`: the key that seals
  // requestState (server.request_state_key_file, shared by replicas); empty: a random one.
  Dispatcher(ServerIdentity identity, ToolRegistry tools, ResourceRegistry resources,
             std::shared_ptr<spdlog::logger> logger, TaskStore* tasks = nullptr,
             std::string request_state_key = {});

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

  // 2026-07-28: one message served on its own. `calls` only registers the request in flight
  // (its principal scopes sandbox sessions and files; notifications/cancelled finds the request
  // there on stdio); nothing negotiated is read from it. Returns the response of a request;
  // nullopt for notifications, client responses and cancelled requests.
  std::optional<nlohmann::json> HandleModern(Session& calls, const nlohmann::json& message,
                                             Outbound& out);
  // The same for a request CheckModern(message) passed, with the _meta it read (`meta`): the
  // request is served without reading its _meta or checking it again.
  std::optional<nlohmann::json> HandleModern(Session& calls, const nlohmann::json& message,
                                             const RequestMeta& meta, Outbound& out);
  // The refusal HandleModern would answer for a message before any work (a bad envelope or
  // _meta, an unknown method or tool, arguments that are no object, a capability the tool needs
  // and the request did not declare) with its HTTP status, and the request's parsed _meta.
  // Transports ask before opening a stream, so these errors get their own HTTP status; a
  // notification or response is refused only for its envelope.
  ModernCheck CheckModern(const nlohmann::json& message) const;
  // The HTTP status of a 2026-07-28 error response: 404 for -32601, 400 for -32020, -32021 and
  // -32022, else 200 (a JSON-RPC error is an answer like any other).
  static int ModernHttpStatus(const nlohmann::json& response);

  // True for requests that may run long or send notifications (tools/call): transports run
  // them off their reading thread and give them a stream.
  static bool IsLongRunning(const nlohmann::json& message);

  const ToolRegistry& tools() const { return tools_; }
  const ResourceRegistry& resources() const { return resources_; }

 private:
  using NotificationHandler = std::function<void(const jsonrpc::Message&)>;
  using RequestHandler = std::function<nlohmann::json(const jsonrpc::Message&, bool& suppress)>;
  // Checks the envelope and routes one message by kind (responses are dropped); a library
  // exception becomes -32603 for a request, never a crash. Both eras go through it.
  std::optional<nlohmann::json> Route(const nlohmann::json& value,
                                      const NotificationHandler& notification,
                                      const RequestHandler& request);
  nlohmann::json HandleRequest(Session& session, const std::string& method,
                               const nlohmann::json& id, const nlohmann::json& params,
                               Outbound& out, bool& suppress);
  void HandleNotification(Session& session, const std::string& method,
                          const nlohmann::json& params);
  nlohmann::json Initialize(Session& session, const nlohmann::json& id,
                            const nlohmann::json& params);
  // `meta`: the 2026-07-28 request's own, nullptr for the legacy era.
  nlohmann::json CallTool(Session& session, const nlohmann::json& id, const nlohmann::json& params,
                          Outbound& out, bool& suppress, std::optional<LogLevel> log_level,
                          const RequestMeta* meta);
  nlohmann::json HandleResources(Session& session, const std::string& method,
                                 const nlohmann::json& id, const nlohmann::json& params,
                                 bool modern);
  // CheckModern after the envelope: the request's _meta (400 when broken), then
  // RefuseModernRequest (its status by ModernHttpStatus).
  ModernCheck CheckModernMessage(const jsonrpc::Message& message) const;
  // The refusal of a request whose _meta is valid: an unknown method, a task method without the
  // extension or a taskId, a tools/call the tool or the declared capabilities refuse.
  std::optional<nlohmann::json> RefuseModernRequest(const jsonrpc::Message& message,
                                                    const RequestMeta& declared) const;
  // `meta`: the request's own, as CheckModernMessage read it.
  nlohmann::json HandleModernRequest(Session& calls, const std::string& method,
                                     const nlohmann::json& id, const nlohmann::json& params,
                                     const RequestMeta& meta, Outbound& out, bool& suppress);
  nlohmann::json Discover(const nlohmann::json& id) const;
  nlohmann::json HandleTasks(const std::string& principal, const std::string& method,
                             const nlohmann::json& id, const nlohmann::json& params);
  // Creates the task that runs the call; the CreateTaskResult, or the refusal at a task limit
  // as a tool error.
  nlohmann::json StartTask(Tool& tool, const nlohmann::json& arguments, const ToolContext& request);
  // Adds what every 2026-07-28 result carries: resultType and the server's identity in _meta.
  nlohmann::json Modernize(nlohmann::json response) const;
  nlohmann::json ServerInfo() const;
  // An input_required tool result on its way out: input requests the request's capabilities do
  // not cover are dropped (-32021 when none is left), requestState is sealed; in the legacy era,
  // which has no such results, it becomes a tool error.
  nlohmann::json FinishInputRequired(const nlohmann::json& id, const Tool& tool,
                                     const std::string& principal, const RequestMeta* meta,
                                     nlohmann::json result) const;

  const ServerIdentity identity_;
  const ToolRegistry tools_;
  const ResourceRegistry resources_;
  std::shared_ptr<spdlog::logger> logger_;
  const RequestStateSealer sealer_;
  TaskStore* const tasks_;
};

}  // namespace sandbox::mcp
