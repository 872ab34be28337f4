// The dispatcher of protocol revision 2026-07-28 (HandleModern, CheckModern): no initialize,
// every request carries its version and capabilities in params._meta and is served on its own;
// server/discover, the tasks extension (tasks/*, a tools/call started as a task), input_required
// results, and what every result carries (resultType, the server's identity, caching hints).
// The parts both eras share are in dispatcher.cc.
#include <cstdint>
#include <memory>
#include <string>

#include "dispatcher_errors.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/protocol_version.h"
#include "sandbox/mcp/request_notifier.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
using detail::ErrorResponse;
using detail::InvalidParams;
using jsonrpc::InvalidMessage;
using jsonrpc::MakeError;
using jsonrpc::MakeResult;
using jsonrpc::Message;
using jsonrpc::MessageKind;
using jsonrpc::ParseMessage;
using jsonrpc::RpcError;
namespace rpc_code = jsonrpc::rpc_code;

// Tools never change while the server runs and are the same for every caller, so a client may
// keep the list for a while (2026-07-28 caching hints).
constexpr std::int64_t kToolsListTtlMs = 300000;

bool IsTaskMethod(const std::string& method) {
  return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel";
}

json TasksExtensionRequired() {
  return {
      {"requiredCapabilities", {{"extensions", {{std::string(kTasksExtension), json::object()}}}}}};
}

// A task run's notifications: its stdout and stderr (the relay's log messages) become the
// task's live output; nothing is sent anywhere (a task has no stream).
class TaskOutbound final : public Outbound {
 public:
  explicit TaskOutbound(Task& task) : task_(task) {}
  void Send(const json& message) override {
    if (message.value("method", "") != "notifications/message") return;
    const json& params = message["params"];
    const std::string logger = params.value("logger", "");
    if (!params.contains("data") || !params["data"].is_string()) return;
    if (logger == "stdout") task_.AppendOutput(params["data"].get<std::string>());
    if (logger == "stderr") task_.AppendOutput("[stderr] " + params["data"].get<std::string>());
  }

 private:
  Task& task_;
};

bool IsResourceMethod(const std::string& method) {
  return method == "resources/list" || method == "resources/templates/list" ||
         method == "resources/read";
}

}  // namespace

ModernCheck Dispatcher::CheckModern(const json& value) const {
  auto parsed = ParseMessage(value);
  if (auto* invalid = std::get_if<InvalidMessage>(&parsed)) {
    return ModernCheck{MakeError(invalid->id, invalid->error), 400, std::nullopt};
  }
  return CheckModernMessage(std::get<Message>(parsed));
}

ModernCheck Dispatcher::CheckModernMessage(const Message& message) const {
  if (message.kind != MessageKind::kRequest) return {};
  auto meta = ParseRequestMeta(message.params);
  if (auto* failure = std::get_if<RpcFailure>(&meta)) {
    return ModernCheck{MakeError(message.id, failure->error, failure->data), 400, std::nullopt};
  }
  ModernCheck check;
  check.refusal = RefuseModernRequest(message, std::get<RequestMeta>(meta));
  if (check.refusal) {
    check.http_status = ModernHttpStatus(*check.refusal);
  } else {
    check.meta = std::get<RequestMeta>(std::move(meta));
  }
  return check;
}

std::optional<json> Dispatcher::RefuseModernRequest(const Message& message,
                                                    const RequestMeta& declared) const {
  const std::string& method = message.method;
  const bool known = method == "server/discover" || method == "tools/list" ||
                     method == "tools/call" || (IsResourceMethod(method) && !resources_.empty()) ||
                     (IsTaskMethod(method) && tasks_ != nullptr);
  if (!known) {
    return ErrorResponse(message.id, rpc_code::kMethodNotFound, "Method not found: " + method);
  }
  if (IsTaskMethod(method)) {
    if (!declared.HasExtension(kTasksExtension)) {
      return MakeError(
          message.id,
          RpcError{rpc_code::kMissingClientCapability,
                   "Missing required client capability: " + method + " needs the extension " +
                       std::string(kTasksExtension) + " declared in this request's capabilities"},
          TasksExtensionRequired());
    }
    auto task_id = message.params.find("taskId");
    if (task_id == message.params.end() || !task_id->is_string()) {
      return InvalidParams(message.id, "taskId: expected a string");
    }
    return std::nullopt;
  }
  if (method != "tools/call") return std::nullopt;
  const json& params = message.params;
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return InvalidParams(message.id, "name: expected a string");
  }
  const Tool* tool = tools_.Find(name->get<std::string>());
  if (tool == nullptr) {
    return InvalidParams(message.id, "Unknown tool: " + name->get<std::string>());
  }
  if (auto args = params.find("arguments");
      args != params.end() && !args->is_null() && !args->is_object()) {
    return InvalidParams(message.id, "arguments: expected an object");
  }
  if (tool->task_support() == TaskSupport::kRequired &&
      (tasks_ == nullptr || !declared.HasExtension(kTasksExtension))) {
    return MakeError(message.id,
                     RpcError{rpc_code::kMissingClientCapability,
                              "Missing required client capability: " + tool->name() +
                                  " runs only as a task; declare the extension " +
                                  std::string(kTasksExtension) + " in the request's capabilities"},
                     TasksExtensionRequired());
  }
  json missing = json::object();
  const json required = tool->RequiredClientCapabilities();
  for (const auto& [capability, settings] : required.items()) {
    if (!declared.HasCapability(capability)) missing[capability] = settings;
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& [capability, settings] : missing.items()) {
      names += (names.empty() ? "" : ", ") + capability;
    }
    return MakeError(message.id,
                     RpcError{rpc_code::kMissingClientCapability,
                              "Missing required client capability: " + tool->name() +
                                  " needs the client to declare " + names + " in _meta[\"" +
                                  meta_key::kClientCapabilities + "\"]"},
                     json{{"requiredCapabilities", missing}});
  }
  return std::nullopt;
}

int Dispatcher::ModernHttpStatus(const json& response) {
  if (!response.is_object() || !response.contains("error")) return 200;
  const json& code = response["error"].value("code", json());
  if (!code.is_number_integer()) return 200;
  switch (code.get<int>()) {
    case rpc_code::kMethodNotFound:
      return 404;
    case rpc_code::kHeaderMismatch:
    case rpc_code::kMissingClientCapability:
    case rpc_code::kUnsupportedProtocolVersion:
      return 400;
    default:
      return 200;
  }
}

std::optional<json> Dispatcher::HandleModern(Session& calls, const json& value, Outbound& out) {
  return Route(
      value,
      [&](const Message& m) {
        // Only cancellation means something here (stdio); there is no initialized notification.
        if (m.method == "notifications/cancelled") HandleNotification(calls, m.method, m.params);
      },
      [&](const Message& m, bool& suppress) -> json {
        ModernCheck check = CheckModernMessage(m);
        if (check.refusal) return *std::move(check.refusal);
        return HandleModernRequest(calls, m.method, m.id, m.params, *check.meta, out, suppress);
      });
}

std::optional<json> Dispatcher::HandleModern(Session& calls, const json& value,
                                             const RequestMeta& meta, Outbound& out) {
  return Route(
      value, [](const Message&) {},
      [&](const Message& m, bool& suppress) -> json {
        return HandleModernRequest(calls, m.method, m.id, m.params, meta, out, suppress);
      });
}

json Dispatcher::HandleModernRequest(Session& calls, const std::string& method, const json& id,
                                     const json& params, const RequestMeta& meta, Outbound& out,
                                     bool& suppress) {
  // CheckModernMessage has vouched for the envelope, _meta, the method and the tool.
  if (method == "server/discover") return Discover(id);
  if (method == "tools/list") {
    json tools = tools_.List();
    if (tasks_ != nullptr) {
      // Which calls may become tasks (the tasks extension reads execution.taskSupport).
      for (auto& definition : tools) {
        const Tool* tool = tools_.Find(definition.value("name", ""));
        if (tool == nullptr || tool->task_support() == TaskSupport::kForbidden) continue;
        definition["execution"]["taskSupport"] =
            tool->task_support() == TaskSupport::kRequired ? "required" : "optional";
      }
    }
    return Modernize(MakeResult(
        id, {{"tools", std::move(tools)}, {"ttlMs", kToolsListTtlMs}, {"cacheScope", "public"}}));
  }
  if (IsTaskMethod(method)) return Modernize(HandleTasks(calls.principal(), method, id, params));
  if (IsResourceMethod(method)) {
    return Modernize(HandleResources(calls, method, id, params, true));
  }
  return Modernize(CallTool(calls, id, params, out, suppress, meta.log_level, &meta));
}

json Dispatcher::Discover(const json& id) const {
  json versions = json::array();
  for (auto v : AllProtocolVersions()) versions.push_back(std::string(v));
  json capabilities = {{"tools", {{"listChanged", false}}}, {"logging", json::object()}};
  if (!resources_.empty()) {
    capabilities["resources"] = {{"subscribe", false}, {"listChanged", false}};
  }
  if (tasks_ != nullptr) {
    capabilities["extensions"] = {{std::string(kTasksExtension), json::object()}};
  }
  json result = {{"supportedVersions", std::move(versions)},
                 {"capabilities", std::move(capabilities)},
                 {"ttlMs", kToolsListTtlMs},
                 {"cacheScope", "public"}};
  if (!identity_.instructions.empty()) result["instructions"] = identity_.instructions;
  return Modernize(MakeResult(id, std::move(result)));
}

json Dispatcher::Modernize(json response) const {
  auto result = response.find("result");
  if (result == response.end() || !result->is_object()) return response;
  if (!result->contains("resultType")) (*result)["resultType"] = "complete";
  json& meta = (*result)["_meta"];
  if (!meta.is_object()) meta = json::object();
  meta[meta_key::kServerInfo] = ServerInfo();
  return response;
}

json Dispatcher::StartTask(Tool& tool, const json& arguments, const ToolContext& request) {
  std::shared_ptr<spdlog::logger> logger = logger_;
  auto task = tasks_->Start(request.principal, [&tool, arguments, meta = *request.meta,
                                                answers = request.input_responses,
                                                state = request.request_state,
                                                logger](Task& running) {
    TaskOutbound out(running);
    // No progress and no client-facing logs: the relay's output goes to the task.
    RequestNotifier notifier(out, nullptr, LogLevel::kDebug, &running.cancel());
    ToolContext context{running.cancel(), notifier, running.principal(), &meta, answers, state,
                        &running};
    Result<json> result = tool.Call(arguments, context);
    if (!result.ok()) {
      const int code = result.error().code() == ErrorCode::kInvalidArgument
                           ? rpc_code::kInvalidParams
                           : rpc_code::kInternalError;
      running.Fail({{"code", code}, {"message", result.error().message()}});
      return;
    }
    if (result->is_object() && result->value("resultType", "") == "input_required") {
      // Inside a task, input is asked with Task::AwaitInput, not by ending the call.
      running.Fail({{"code", rpc_code::kInternalError},
                    {"message", tool.name() + " asked for input in a way a task cannot carry"}});
      return;
    }
    logger->debug("task {} of {} finished", running.id(), tool.name());
    running.Finish(std::move(*result));
  });
  if (!task.ok()) {
    return json{{"isError", true},
                {"content",
                 {{{"type", "text"}, {"text", "no task was started: " + task.error().message()}}}}};
  }
  logger_->info("task {} started for {} ({})", (*task)->id(), tool.name(), request.principal);
  json created = (*task)->Summary();
  created["resultType"] = "task";
  return created;
}

json Dispatcher::HandleTasks(const std::string& principal, const std::string& method,
                             const json& id, const json& params) {
  // CheckModern vouched for the extension and a string taskId.
  auto task = tasks_->Find(principal, params["taskId"].get<std::string>());
  if (task == nullptr) {
    // Unknown, expired and another principal's ids look the same.
    return InvalidParams(id, "Failed to retrieve task: Task not found");
  }
  if (method == "tasks/get") return MakeResult(id, task->Detailed());
  if (method == "tasks/update") {
    auto responses = params.find("inputResponses");
    if (responses == params.end() || !responses->is_object()) {
      return InvalidParams(id, "inputResponses: expected an object");
    }
    task->Answer(*responses);
    return MakeResult(id, json::object());
  }
  task->RequestCancel();
  logger_->info("task {}: cancel asked", task->id());
  return MakeResult(id, json::object());
}

json Dispatcher::FinishInputRequired(const json& id, const Tool& tool, const std::string& principal,
                                     const RequestMeta* meta, json result) const {
  if (meta == nullptr) {
    return MakeResult(id, {{"isError", true},
                           {"content",
                            {{{"type", "text"},
                              {"text", tool.name() + " asks the client for input, which needs "
                                                     "protocol version 2026-07-28"}}}}});
  }
  // The client must have declared what answering takes (2026-07-28: a server must not send
  // input requests the client cannot serve).
  static const std::pair<const char*, const char*> kNeeds[] = {
      {"elicitation/create", "elicitation"},
      {"sampling/createMessage", "sampling"},
      {"roots/list", "roots"}};
  json missing = json::object();
  if (auto requests = result.find("inputRequests"); requests != result.end()) {
    if (!requests->is_object()) *requests = json::object();
    for (auto it = requests->begin(); it != requests->end();) {
      const std::string method = it->is_object() ? it->value("method", "") : "";
      const char* capability = nullptr;
      for (const auto& [m, c] : kNeeds) capability = method == m ? c : capability;
      if (capability != nullptr && !meta->HasCapability(capability)) {
        missing[capability] = json::object();
        it = requests->erase(it);
      } else {
        ++it;
      }
    }
    if (requests->empty()) result.erase("inputRequests");
  }
  if (!result.contains("inputRequests") && !missing.empty()) {
    return MakeError(id,
                     RpcError{rpc_code::kMissingClientCapability,
                              "Missing required client capability: " + tool.name() +
                                  " needs input the request's capabilities cannot provide"},
                     json{{"requiredCapabilities", missing}});
  }
  if (auto state = result.find("requestState"); state != result.end()) {
    if (state->is_string()) {
      *state = sealer_.Seal(principal, tool.name(), state->get<std::string>());
    } else {
      result.erase(state);
    }
  }
  return MakeResult(id, std::move(result));
}

}  // namespace sandbox::mcp
