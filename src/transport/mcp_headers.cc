#include "mcp_headers.h"

#include "sandbox/core/base64.h"

namespace sandbox::transport {
namespace {

constexpr std::string_view kPrefix = "=?base64?";
constexpr std::string_view kSuffix = "?=";

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

std::optional<std::string> DecodeMcpHeaderValue(std::string_view raw) {
  std::string_view value = TrimOws(raw);
  if (value.size() >= kPrefix.size() + kSuffix.size() && value.starts_with(kPrefix) &&
      value.ends_with(kSuffix)) {
    auto decoded =
        Base64Decode(value.substr(kPrefix.size(), value.size() - kPrefix.size() - kSuffix.size()));
    if (!decoded.ok()) return std::nullopt;
    return std::move(decoded).value();
  }
  return std::string(value);
}

std::string_view McpNameMember(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") {
    return "taskId";
  }
  return {};
}

std::optional<std::string> CheckMcpHeaders(const HeaderLookup& header,
                                           const nlohmann::json& message,
                                           const std::optional<std::string>& meta_version) {
  if (!message.is_object()) return std::nullopt;
  auto method_member = message.find("method");
  if (method_member == message.end() || !method_member->is_string()) return std::nullopt;
  const std::string method = method_member->get<std::string>();

  auto method_header = header("Mcp-Method");
  if (!method_header) return "Header mismatch: the Mcp-Method header is required (" + method + ")";
  auto sent_method = DecodeMcpHeaderValue(*method_header);
  if (!sent_method) return "Header mismatch: the Mcp-Method header holds invalid base64";
  if (*sent_method != method) {
    return "Header mismatch: Mcp-Method header value " + Quote(*sent_method) +
           " does not match body value " + Quote(method);
  }

  if (meta_version) {
    auto version_header = header("MCP-Protocol-Version");
    if (!version_header) {
      return "Header mismatch: the MCP-Protocol-Version header is required (" + *meta_version + ")";
    }
    std::string_view sent = TrimOws(*version_header);
    if (sent != *meta_version) {
      return "Header mismatch: MCP-Protocol-Version header value " + Quote(sent) +
             " does not match body value " + Quote(*meta_version);
    }
  }

  const std::string_view member = McpNameMember(method);
  if (member.empty()) return std::nullopt;
  auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return std::nullopt;
  auto body_name = params->find(member);
  if (body_name == params->end() || !body_name->is_string()) return std::nullopt;
  const std::string name = body_name->get<std::string>();
  auto name_header = header("Mcp-Name");
  if (!name_header) {
    return "Header mismatch: the Mcp-Name header is required for " + method + " (params." +
           std::string(member) + ")";
  }
  auto sent_name = DecodeMcpHeaderValue(*name_header);
  if (!sent_name) return "Header mismatch: the Mcp-Name header holds invalid base64";
  if (*sent_name != name) {
    return "Header mismatch: Mcp-Name header value " + Quote(*sent_name) +
           " does not match body value " + Quote(name);
  }
  return std::nullopt;
}

}  // namespace sandbox::transport
