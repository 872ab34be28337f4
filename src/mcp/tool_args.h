// Strict argument reading and result building shared by the MCP tools (private to sandbox_mcp).
// Every refusal is a kInvalidArgument whose message starts with the argument's name, so the
// dispatcher's -32602 tells a model exactly what to fix.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/human_bytes.h"
#include "sandbox/core/result.h"

namespace sandbox::mcp::detail {

inline Error Invalid(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

// Refuses any argument not in `allowed`: "<key>: unknown argument (expected a, b)".
Status CheckArguments(const nlohmann::json& args, const std::vector<std::string_view>& allowed);
inline Status CheckArguments(const nlohmann::json& args,
                             std::initializer_list<std::string_view> allowed) {
  return CheckArguments(args, std::vector<std::string_view>(allowed));
}

// A required, non-empty string.
Result<std::string> RequiredString(const nlohmann::json& args, std::string_view key,
                                   std::string_view what);
Result<std::optional<std::string>> OptionalString(const nlohmann::json& args, std::string_view key);
// A finite number above 0.
Result<std::optional<double>> OptionalPositiveNumber(const nlohmann::json& args,
                                                     std::string_view key);
// An integer above 0 (an integral float such as 5.0e8 is accepted too).
Result<std::optional<std::int64_t>> OptionalPositiveInteger(const nlohmann::json& args,
                                                            std::string_view key);
// session_id: required, 1-128 characters of [A-Za-z0-9_-] (what the server mints).
Result<std::string> SessionIdArgument(const nlohmann::json& args);

// A CallToolResult with one text block and isError: true.
nlohmann::json ToolError(const std::string& text);
// A CallToolResult with one text block and structuredContent.
nlohmann::json ToolSuccess(const std::string& text, nlohmann::json structured);

using sandbox::HumanBytes;  // core/human_bytes.h
// "45 s", "12 min", "3.5 h".
std::string HumanSeconds(double seconds);
// A configured duration, exact and readable: "90 s", "900 s (15 min)".
std::string ExactSeconds(std::int64_t seconds);
// "%g" of a number: 30, 0.5, 300.
std::string Figure(double value);

}  // namespace sandbox::mcp::detail
