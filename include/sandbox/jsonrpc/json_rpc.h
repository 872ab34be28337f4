// JSON-RPC 2.0 as MCP speaks it: the envelope check of one incoming message, the error codes
// (JSON-RPC's and those MCP defines in its server-error range), and builders for the messages the
// server sends. Ids are kept as the JSON value received, so `1` and `"1"` stay different requests
// and each is echoed exactly. A library of its own so the HTTP plumbing (sandbox_http) can answer
// in JSON-RPC without the MCP core.
// Thread-safety: stateless functions and value types; safe from any thread.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "sandbox/core/result.h"

namespace sandbox::jsonrpc {

using json = nlohmann::json;

// Error codes of JSON-RPC 2.0, plus the MCP transport's own.
namespace rpc_code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerError = -32000;       // transport-level refusals (HTTP 4xx bodies)
inline constexpr int kSessionNotFound = -32001;   // Streamable HTTP: unknown or ended session
inline constexpr int kResourceNotFound = -32002;  // resources/read of an unknown URI (legacy)
// 2026-07-28: each is HTTP 400 on Streamable HTTP.
inline constexpr int kHeaderMismatch = -32020;  // a standard header disagrees with the body
inline constexpr int kMissingClientCapability = -32021;     // data.requiredCapabilities
inline constexpr int kUnsupportedProtocolVersion = -32022;  // data.supported, data.requested
}  // namespace rpc_code

struct RpcError {
  int code = rpc_code::kInternalError;
  std::string message;
};

enum class MessageKind { kRequest, kNotification, kResponse };

// One valid incoming message.
struct Message {
  MessageKind kind = MessageKind::kRequest;
  json id;  // requests and responses: the id exactly as received; null for notifications
  std::string method;
  json params;  // the params member, or null when absent
};

// Why a message is not valid JSON-RPC, and the id to answer with (null when unknowable).
struct InvalidMessage {
  RpcError error;
  json id;
};

// Checks the envelope: an object, "jsonrpc": "2.0", a string method (requests, notifications)
// or a result/error (responses), an id that is a string or a number, params an object or array.
std::variant<Message, InvalidMessage> ParseMessage(const json& value);

// Parses one message's text with the server's nesting limit (sandbox::kMaxJsonDepth, see
// core/json.h). Errors: kLimit (nested too deep) or kInvalidArgument (malformed JSON, invalid
// UTF-8); both are a JSON-RPC parse error (-32700) whose message is RpcParseError(error).
Result<json> ParseJsonText(std::string_view text);

// "Parse error: <why>" for a failed ParseJsonText.
std::string RpcParseError(const Error& error);

// The most messages one JSON-RPC batch may hold (2025-03-26 only); a larger batch is refused
// as a whole with -32600 before any member runs.
inline constexpr std::size_t kMaxBatchSize = 64;

json MakeResult(const json& id, json result);
json MakeError(const json& id, const RpcError& error);
// With the error's optional `data` member (e.g. {"uri": ...} of a resource not found).
json MakeError(const json& id, const RpcError& error, json data);
json MakeNotification(std::string_view method, json params);

// Serializes on one line; invalid UTF-8 that slipped into a string becomes U+FFFD instead of an
// exception.
std::string DumpJson(const json& value);

// A key that tells ids apart by type and value (1 -> "1", "1" -> "\"1\"").
std::string IdKey(const json& id);
// A client's request id for a log line: its IdKey escaped and cut at 128 bytes (an id may be a
// string of any length).
std::string IdForLog(const json& id);

}  // namespace sandbox::jsonrpc
