// The dispatcher's parts both protocol eras use: construction, the routing of one message by
// kind, notifications, tools/call and the resources methods. What only one era has is in
// dispatcher_2025_11_25.cc (2024-11-05 to 2025-11-25: sessions, initialize, batches) and
// dispatcher_2026_07_28.cc (HandleModern: per-request _meta, server/discover, tasks).
#include "sandbox/mcp/dispatcher.h"

#include <exception>

#include "dispatcher_errors.h"
#include "sandbox/core/log_safe.h"
#include "sandbox/core/random_id.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/request_notifier.h"
#include "session_uri.h"

namespace sandbox::mcp {
namespace {

// The JSON-RPC framing every method answers in (sandbox_jsonrpc).
using json = nlohmann::json;
using detail::ErrorResponse;
using detail::InvalidParams;
using jsonrpc::IdForLog;
using jsonrpc::IdKey;
using jsonrpc::InvalidMessage;
using jsonrpc::MakeError;
using jsonrpc::MakeResult;
using jsonrpc::Message;
using jsonrpc::MessageKind;
using jsonrpc::ParseMessage;
using jsonrpc::RpcError;
namespace rpc_code = jsonrpc::rpc_code;

// A failed resources/read for the log: not the URI (a session file's names the session, whose id
// the log never holds), the error with such a session's id replaced by its digest, quoted.
std::string ResourceErrorForLog(std::string_view uri, const Error& error) {
  std::string text = error.ToString();
  if (auto ref = ParseSessionFileUri(uri)) text = RedactSessionId(text, ref->session_id);
  return LogQuoted(text, 1024);
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

json Dispatcher::ServerInfo() const {
  json info = {{"name", identity_.name}, {"version", identity_.version}};
  if (!identity_.title.empty()) info["title"] = identity_.title;
  return info;
}

}  // namespace sandbox::mcp
