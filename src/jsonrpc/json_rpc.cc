#include "sandbox/jsonrpc/json_rpc.h"

#include "sandbox/core/json.h"
#include "sandbox/core/log_safe.h"

namespace sandbox::jsonrpc {
namespace {

bool IsValidId(const json& id) { return id.is_string() || id.is_number(); }

InvalidMessage Invalid(std::string message, json id = nullptr) {
  return InvalidMessage{RpcError{rpc_code::kInvalidRequest, std::move(message)}, std::move(id)};
}

}  // namespace

std::variant<Message, InvalidMessage> ParseMessage(const json& value) {
  if (!value.is_object()) return Invalid("a JSON-RPC message must be an object");
  json id = nullptr;
  bool has_id = false;
  if (auto it = value.find("id"); it != value.end()) {
    has_id = true;
    if (IsValidId(*it)) id = *it;
  }
  auto version = value.find("jsonrpc");
  if (version == value.end() || *version != "2.0") {
    return Invalid("jsonrpc: expected \"2.0\"", id);
  }
  if (has_id && !IsValidId(value["id"])) return Invalid("id: expected a string or a number");

  Message message;
  auto method = value.find("method");
  if (method == value.end()) {
    bool has_result = value.contains("result");
    bool has_error = value.contains("error");
    if (!has_id || has_result == has_error) {
      return Invalid("method: required (a response needs an id and exactly one of result, error)",
                     id);
    }
    message.kind = MessageKind::kResponse;
    message.id = id;
    return message;
  }
  if (!method->is_string()) return Invalid("method: expected a string", id);
  message.method = method->get<std::string>();
  if (auto params = value.find("params"); params != value.end()) {
    if (!params->is_object() && !params->is_array()) {
      return Invalid("params: expected an object", id);
    }
    message.params = *params;
  }
  message.kind = has_id ? MessageKind::kRequest : MessageKind::kNotification;
  message.id = id;
  return message;
}

Result<json> ParseJsonText(std::string_view text) { return ParseJson(text); }

std::string RpcParseError(const Error& error) { return "Parse error: " + error.message(); }

json MakeResult(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json MakeError(const json& id, const RpcError& error) {
  return json{{"jsonrpc", "2.0"},
              {"id", id},
              {"error", {{"code", error.code}, {"message", error.message}}}};
}

json MakeError(const json& id, const RpcError& error, json data) {
  json out = MakeError(id, error);
  if (!data.is_null()) out["error"]["data"] = std::move(data);
  return out;
}

json MakeNotification(std::string_view method, json params) {
  return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::string DumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string IdKey(const json& id) { return DumpJson(id); }

std::string IdForLog(const json& id) { return LogEscape(IdKey(id), 128); }

}  // namespace sandbox::jsonrpc
