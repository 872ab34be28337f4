#include "sandbox/mcp/dispatcher.h"

#include <cstdint>
#include <exception>

#include "sandbox/core/log_safe.h"
#include "sandbox/core/random_id.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/protocol_version.h"
#include "sandbox/mcp/request_notifier.h"
#include "session_uri.h"

namespace sandbox::mcp {
namespace {

// The JSON-RPC framing every method answers in (sandbox_jsonrpc).
using json = nlohmann::json;
using jsonrpc::DumpJson;
using jsonrpc::IdForLog;
using jsonrpc::IdKey;
using jsonrpc::InvalidMessage;
using jsonrpc::kMaxBatchSize;
using jsonrpc::MakeError;
using jsonrpc::MakeResult;
using jsonrpc::Message;
using jsonrpc::MessageKind;
using jsonrpc::ParseJsonText;
using jsonrpc::ParseMessage;
using jsonrpc::RpcError;
using jsonrpc::RpcParseError;
namespace rpc_code = jsonrpc::rpc_code;

json ErrorResponse(const json& id, int code, std::string message) {
  return MakeError(id, RpcError{code, std::move(message)});
}

json InvalidParams(const json& id, std::string message) {
  return ErrorResponse(id, rpc_code::kInvalidParams, std::move(message));
}

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

// A failed resources/read for the log: not the URI (a session file's names the session, whose id
// the log never holds), the error with such a session's id replaced by its digest, quoted.
std::string ResourceErrorForLog(std::string_view uri, const Error& error) {
  std::string text = error.ToString();
  if (auto ref = ParseSessionFileUri(uri)) text = RedactSessionId(text, ref->session_id);
  return LogQuoted(text, 1024);
}

bool IsResourceMethod(const std::string& method) {
  return method == "resources/list" || method == "resources/templates/list" ||
         method == "resources/read";
}

}  // namespace

Dispatcher::Dispatcher(ServerIdentity identity, ToolRegistry tools,
                       std::shared_ptr<spdlog::logger> logger)
    : Dispatcher(std::move(identity), std::move(tools), ResourceRegistry{}, std::move(logger)) {}

Dispatcher::Dispatcher(ServerIdentity identity, ToolRegistry tools, ResourceRegistry resources,
                       std::shared_ptr<spdlog::logger> logger, TaskStore* tasks,
                       std::string request_state_key)
    : identity_(std::move(identity)),
      tools_(std::move(tools)),
      resources_(std::move(resources)),
      logger_(std::move(logger)),
      sealer_(request_state_key.empty() ? RandomHexId(32) : std::move(request_state_key)),
      tasks_(tasks) {}

bool Dispatcher::IsLongRunning(const json& message) {
  if (!message.is_object()) return false;
  auto method = message.find("method");
  return method != message.end() && *method == "tools/call" && message.contains("id");
}

std::optional<json> Dispatcher::HandleText(Session& session, std::string_view text, Outbound& out) {
  auto value = ParseJsonText(text);
  if (!value.ok())
    return ErrorResponse(nullptr, rpc_code::kParseError, RpcParseError(value.error()));
  if (value->is_array()) return HandleBatch(session, *value, out);
  return Handle(session, *value, out);
}

std::optional<json> Dispatcher::HandleBatch(Session& session, const json& batch, Outbound& out) {
  std::string version = session.protocol_version();
  if (!AllowsBatches(version)) {
    return ErrorResponse(nullptr, rpc_code::kInvalidRequest,
                         "JSON-RPC batches are only supported in protocol version 2025-03-26" +
                             (version.empty() ? std::string(" (initialize first, without a batch)")
                                              : " (this session uses " + version + ")"));
  }
  if (batch.empty()) return ErrorResponse(nullptr, rpc_code::kInvalidRequest, "empty batch");
  if (batch.size() > kMaxBatchSize) {
    return ErrorResponse(nullptr, rpc_code::kInvalidRequest,
                         "the batch holds " + std::to_string(batch.size()) +
                             " messages, more than the limit of " + std::to_string(kMaxBatchSize));
  }
  json responses = json::array();
  for (const auto& member : batch) {
    // Compared as JSON: a member whose method is no string is ParseMessage's to refuse (json's
    // value("method", "") would throw out of the transport for it).
    if (member.is_object() && member.contains("method") && member["method"] == "initialize") {
      auto id = member.find("id");
      const bool valid_id = id != member.end() && (id->is_string() || id->is_number());
      responses.push_back(ErrorResponse(valid_id ? *id : json(), rpc_code::kInvalidRequest,
                                        "initialize must not be part of a batch"));
      continue;
    }
    if (auto response = Handle(session, member, out)) responses.push_back(std::move(*response));
  }
  if (responses.empty()) return std::nullopt;
  return responses;
}

std::optional<json> Dispatcher::Route(const json& value, const NotificationHandler& notification,
                                      const RequestHandler& request) {
  auto parsed = ParseMessage(value);
  if (auto* invalid = std::get_if<InvalidMessage>(&parsed)) {
    return MakeError(invalid->id, invalid->error);
  }
  const Message& message = std::get<Message>(parsed);
  try {
    switch (message.kind) {
      case MessageKind::kResponse:
        return std::nullopt;  // the server sends no requests, so nothing awaits an answer
      case MessageKind::kNotification:
        notification(message);
        return std::nullopt;
      case MessageKind::kRequest: {
        bool suppress = false;
        json response = request(message, suppress);
        if (suppress) return std::nullopt;
        return response;
      }
    }
  } catch (const std::exception& e) {
    // A library threw (e.g. a JSON type error in a path we did not validate): answer, never crash.
    logger_->error("{} failed: {}", LogQuoted(message.method), LogEscape(e.what(), 1024));
    if (message.kind != MessageKind::kRequest) return std::nullopt;
    return ErrorResponse(message.id, rpc_code::kInternalError,
                         std::string("internal error: ") + e.what());
  }
  return std::nullopt;
}

std::optional<json> Dispatcher::Handle(Session& session, const json& value, Outbound& out) {
  return Route(
      value, [&](const Message& m) { HandleNotification(session, m.method, m.params); },
      [&](const Message& m, bool& suppress) {
        return HandleRequest(session, m.method, m.id, m.params, out, suppress);
      });
}

void Dispatcher::HandleNotification(Session& session, const std::string& method,
                                    const json& params) {
  if (method == "notifications/initialized") {
    session.MarkClientReady();
  } else if (method == "notifications/cancelled") {
    if (!params.is_object() || !params.contains("requestId")) return;
    if (session.CancelRequest(params["requestId"])) {
      logger_->info("request {} cancelled by the client", IdForLog(params["requestId"]));
    }
  }
  // Other notifications (roots/list_changed, progress from the client, ...) need nothing.
}

json Dispatcher::HandleRequest(Session& session, const std::string& method, const json& id,
                               const json& params, Outbound& out, bool& suppress) {
  if (method == "initialize") return Initialize(session, id, params);
  if (method == "ping") return MakeResult(id, json::object());
  static const char* const kKnown[] = {"tools/list", "tools/call", "logging/setLevel"};
  static const char* const kResources[] = {"resources/list", "resources/templates/list",
                                           "resources/read"};
  bool known = false;
  for (const char* k : kKnown) known = known || method == k;
  bool resource_method = false;
  for (const char* k : kResources) resource_method = resource_method || method == k;
  known = known || (resource_method && !resources_.empty());
  if (!known) return ErrorResponse(id, rpc_code::kMethodNotFound, "Method not found: " + method);
  if (!session.initialized()) {
    return ErrorResponse(id, rpc_code::kInvalidRequest,
                         "the session is not initialized: send initialize before " + method);
  }
  if (method == "tools/list") return MakeResult(id, {{"tools", tools_.List()}});
  if (resource_method) return HandleResources(session, method, id, params, false);
  if (method == "logging/setLevel") {
    if (!params.is_object() || !params.contains("level") || !params["level"].is_string()) {
      return InvalidParams(id, "level: expected a string");
    }
    auto level = ParseLogLevel(params["level"].get<std::string>());
    if (!level) {
      return InvalidParams(id, "level: expected one of " + std::string(LogLevelNames()));
    }
    session.SetLogLevel(*level);
    return MakeResult(id, json::object());
  }
  return CallTool(session, id, params, out, suppress, session.log_level(), nullptr);
}

json Dispatcher::Initialize(Session& session, const json& id, const json& params) {
  if (session.initialized()) {
    return ErrorResponse(id, rpc_code::kInvalidRequest, "the session is already initialized");
  }
  if (!params.is_object()) return InvalidParams(id, "params: expected an object");
  auto requested = params.find("protocolVersion");
  if (requested == params.end() || !requested->is_string()) {
    return InvalidParams(id, "protocolVersion: expected a string");
  }
  std::string version = NegotiateProtocolVersion(requested->get<std::string>());
  session.MarkInitialized(version, params.value("clientInfo", json::object()));
  json server_info = ServerInfo();
  json capabilities = {{"tools", {{"listChanged", false}}}, {"logging", json::object()}};
  if (!resources_.empty()) {
    capabilities["resources"] = {{"subscribe", false}, {"listChanged", false}};
  }
  json result = {
      {"protocolVersion", version}, {"capabilities", capabilities}, {"serverInfo", server_info}};
  if (!identity_.instructions.empty()) result["instructions"] = identity_.instructions;
  logger_->info("session initialized: protocol {}, client {}", LogValue(version),
                LogEscape(DumpJson(params.value("clientInfo", json::object())), 512, false));
  return MakeResult(id, std::move(result));
}

json Dispatcher::CallTool(Session& session, const json& id, const json& params, Outbound& out,
                          bool& suppress, std::optional<LogLevel> log_level,
                          const RequestMeta* meta) {
  if (!params.is_object()) return InvalidParams(id, "params: expected an object");
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return InvalidParams(id, "name: expected a string");
  }
  Tool* tool = tools_.Find(name->get<std::string>());
  if (tool == nullptr) return InvalidParams(id, "Unknown tool: " + name->get<std::string>());
  json arguments = json::object();
  if (auto args = params.find("arguments"); args != params.end() && !args->is_null()) {
    if (!args->is_object()) return InvalidParams(id, "arguments: expected an object");
    arguments = *args;
  }
  json progress_token = nullptr;
  if (auto sent = params.find("_meta"); sent != params.end() && sent->is_object()) {
    if (auto token = sent->find("progressToken"); token != sent->end()) {
      if (!token->is_string() && !token->is_number()) {
        return InvalidParams(id, "_meta.progressToken: expected a string or a number");
      }
      progress_token = *token;
    }
  }

  json input_responses = json::object();
  std::string request_state;
  if (meta != nullptr) {
    if (auto answers = params.find("inputResponses");
        answers != params.end() && !answers->is_null()) {
      if (!answers->is_object()) return InvalidParams(id, "inputResponses: expected an object");
      input_responses = *answers;
    }
    if (auto state = params.find("requestState"); state != params.end() && !state->is_null()) {
      if (!state->is_string()) return InvalidParams(id, "requestState: expected a string");
      auto opened = sealer_.Open(session.principal(), tool->name(), state->get<std::string>());
      if (!opened.ok()) return InvalidParams(id, opened.error().message());
      request_state = std::move(opened).value();
    }
  }

  auto cancel = session.BeginRequest(id);
  if (cancel == nullptr) {
    return ErrorResponse(id, rpc_code::kInvalidRequest,
                         session.ended()
                             ? "the session has ended"
                             : "a request with id " + IdKey(id) + " is already in flight");
  }
  RequestNotifier notifier(out, progress_token, log_level, cancel.get());
  ToolContext context{*cancel,
                      notifier,
                      session.principal(),
                      meta,
                      std::move(input_responses),
                      std::move(request_state)};
  // With the tasks extension declared, a call that may become a task does: the run goes on in
  // the background and the answer is its id (after what the tool must answer at once).
  const bool as_task = meta != nullptr && tasks_ != nullptr &&
                       meta->HasExtension(kTasksExtension) &&
                       tool->task_support() != TaskSupport::kForbidden;
  Result<json> result = sandbox::Error(ErrorCode::kInternal, "not run");
  try {
    if (as_task) {
      auto early = tool->Prepare(arguments, context);
      if (!early.ok()) {
        result = early.error();
      } else if (early->has_value()) {
        result = std::move(**early);
      } else {
        result = StartTask(*tool, arguments, context);
      }
    } else {
      result = tool->Call(arguments, context);
    }
  } catch (...) {
    suppress = session.EndRequest(id);
    throw;
  }
  suppress = session.EndRequest(id);
  if (suppress) {
    logger_->info("tools/call {} ({}): cancelled, no response sent", IdForLog(id), tool->name());
  }
  if (!result.ok()) {
    int code = result.error().code() == ErrorCode::kInvalidArgument ? rpc_code::kInvalidParams
                                                                    : rpc_code::kInternalError;
    return ErrorResponse(id, code, result.error().message());
  }
  if (result->is_object() && result->value("resultType", "") == "input_required") {
    return FinishInputRequired(id, *tool, session.principal(), meta, std::move(*result));
  }
  return MakeResult(id, std::move(*result));
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

json Dispatcher::HandleResources(Session& session, const std::string& method, const json& id,
                                 const json& params, bool modern) {
  // A principal's resources are its sessions' files, which code may change at any moment:
  // private to the caller and not worth keeping.
  auto cacheable = [modern](json result) {
    if (modern) {
      result["ttlMs"] = 0;
      result["cacheScope"] = "private";
    }
    return result;
  };
  if (!params.is_null() && !params.is_object()) {
    return InvalidParams(id, "params: expected an object");
  }
  const json args = params.is_object() ? params : json::object();
  std::string cursor;
  if (auto c = args.find("cursor"); c != args.end() && !c->is_null()) {
    if (!c->is_string()) return InvalidParams(id, "cursor: expected a string");
    cursor = c->get<std::string>();
  }
  if (method == "resources/templates/list") {
    // Every template fits on one page, so no cursor is ever handed out.
    if (!cursor.empty()) return InvalidParams(id, "cursor: unknown cursor (there is one page)");
    return MakeResult(id, cacheable(resources_.Templates()));
  }
  if (method == "resources/list") {
    auto page = resources_.List(session.principal(), cursor);
    if (!page.ok()) {
      int code = page.error().code() == ErrorCode::kInvalidArgument ? rpc_code::kInvalidParams
                                                                    : rpc_code::kInternalError;
      return ErrorResponse(id, code, page.error().message());
    }
    return MakeResult(id, cacheable(std::move(*page)));
  }
  auto uri = args.find("uri");
  if (uri == args.end() || !uri->is_string()) return InvalidParams(id, "uri: expected a string");
  const std::string uri_text = uri->get<std::string>();
  auto read = resources_.Read(session.principal(), uri_text);
  if (read.ok()) return MakeResult(id, cacheable(std::move(*read)));
  switch (read.error().code()) {
    case ErrorCode::kNotFound:
      // 2026-07-28 moved this from -32002 to invalid params.
      return MakeError(id,
                       RpcError{modern ? rpc_code::kInvalidParams : rpc_code::kResourceNotFound,
                                "Resource not found: " + read.error().message()},
                       json{{"uri", uri_text}});
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kLimit:  // e.g. a file above the download limit: this read cannot succeed
      return InvalidParams(id, read.error().message());
    default:
      // Not the URI: it names the session, whose id the log never holds (nor the message).
      logger_->warn("resources/read failed: {}", ResourceErrorForLog(uri_text, read.error()));
      return ErrorResponse(id, rpc_code::kInternalError, read.error().message());
  }
}

// ---- 2026-07-28 ----

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

json Dispatcher::ServerInfo() const {
  json info = {{"name", identity_.name}, {"version", identity_.version}};
  if (!identity_.title.empty()) info["title"] = identity_.title;
  return info;
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

}  // namespace sandbox::mcp
