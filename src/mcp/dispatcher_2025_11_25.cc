// The dispatcher of the session era, protocol versions 2024-11-05 to 2025-11-25 (Handle,
// HandleBatch, HandleText): initialize negotiates a version and marks the client's Session
// initialized, every later request is served against that Session, and 2025-03-26 allows
// JSON-RPC batches. The parts both eras share are in dispatcher.cc.
#include <string>

#include "dispatcher_errors.h"
#include "sandbox/core/log_safe.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/log_level.h"
#include "sandbox/mcp/protocol_version.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
using detail::ErrorResponse;
using detail::InvalidParams;
using jsonrpc::DumpJson;
using jsonrpc::kMaxBatchSize;
using jsonrpc::MakeResult;
using jsonrpc::Message;
using jsonrpc::ParseJsonText;
using jsonrpc::RpcParseError;
namespace rpc_code = jsonrpc::rpc_code;

}  // namespace

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

std::optional<json> Dispatcher::Handle(Session& session, const json& value, Outbound& out) {
  return Route(
      value, [&](const Message& m) { HandleNotification(session, m.method, m.params); },
      [&](const Message& m, bool& suppress) {
        return HandleRequest(session, m.method, m.id, m.params, out, suppress);
      });
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

}  // namespace sandbox::mcp
