// The standard request headers of MCP 2026-07-28 on Streamable HTTP, checked against the body:
// MCP-Protocol-Version (every request), Mcp-Method (every message) and Mcp-Name (the name, URI
// or task id of tools/call, prompts/get, resources/read and tasks/get|update|cancel). Values are
// compared case-sensitively after trimming spaces and tabs; a value that is not plain ASCII
// travels as =?base64?<standard base64>?= and is decoded first.
// Thread-safety: stateless functions.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox::transport {

// A request header by name (case-insensitive), nullopt when absent.
using HeaderLookup = std::function<std::optional<std::string>(std::string_view name)>;

// A header value as the client meant it: trimmed, and decoded when base64-wrapped. nullopt when
// the wrapper holds no valid base64.
std::optional<std::string> DecodeMcpHeaderValue(std::string_view raw);

// The body member Mcp-Name must repeat for `method` (e.g. "name" for tools/call); empty when
// the method has none.
std::string_view McpNameMember(std::string_view method);

// Checks Mcp-Method and Mcp-Name against the message, and MCP-Protocol-Version against the
// version its _meta names (`meta_version`, when it names one). Returns the HeaderMismatch
// (-32020) message, or nullopt when they agree. A body member that is missing or not a string
// is not compared here: the dispatcher refuses that request with its own error.
std::optional<std::string> CheckMcpHeaders(const HeaderLookup& header,
                                           const nlohmann::json& message,
                                           const std::optional<std::string>& meta_version);

}  // namespace sandbox::transport
