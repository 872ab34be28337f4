// RequestMeta: what a 2026-07-28 request says about itself in params._meta, read once and checked
// once for both transports: the protocol version (required), the client's capabilities
// (required; `{}` declares none), its identity (optional) and the log level it wants for this
// request (absent: no notifications/message at all).
//
// A request of that era is served on its own: nothing of an earlier request carries over, so a
// capability the client declared before counts only if this request declares it again.
// Thread-safety: value types and stateless functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/log_level.h"

namespace sandbox::mcp {

namespace meta_key {
inline constexpr const char* kProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr const char* kLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr const char* kServerInfo = "io.modelcontextprotocol/serverInfo";
}  // namespace meta_key

// The tasks extension's identifier, declared under clientCapabilities.extensions.
inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";

struct RequestMeta {
  std::string protocol_version;
  nlohmann::json client_capabilities = nlohmann::json::object();
  nlohmann::json client_info;  // null when the client sent none
  std::optional<LogLevel> log_level;

  // A top-level capability (sampling, elicitation, roots, ...) is declared.
  bool HasCapability(std::string_view name) const;
  // An extension (e.g. kTasksExtension) is declared under capabilities.extensions.
  bool HasExtension(std::string_view id) const;
  // Form-mode elicitation is declared: `elicitation` empty (form is then implied) or naming
  // `form` (a client may declare only `url`).
  bool HasFormElicitation() const;
};

// A refusal with the error's data member (null when it has none).
struct RpcFailure {
  jsonrpc::RpcError error;
  nlohmann::json data;
};

// Reads params._meta. Refusals: -32602 for a missing or malformed _meta, version or
// capabilities (or a log level that is not one of the eight); -32022 with
// {supported, requested} for a version this server does not serve without initialize.
std::variant<RequestMeta, RpcFailure> ParseRequestMeta(const nlohmann::json& params);

// The version a message's params._meta names, if it names one as a string (used to tell the
// eras apart before anything is validated).
std::optional<std::string> MetaProtocolVersion(const nlohmann::json& message);

// The data of an UnsupportedProtocolVersionError: {supported: every version, requested}.
nlohmann::json UnsupportedVersionData(std::string_view requested);

}  // namespace sandbox::mcp
