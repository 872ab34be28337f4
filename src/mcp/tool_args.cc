#include "tool_args.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "sandbox/core/json.h"

namespace sandbox::mcp::detail {

using json = nlohmann::json;

Status CheckArguments(const json& args, const std::vector<std::string_view>& allowed) {
  for (const auto& [key, value] : args.items()) {
    bool known = false;
    for (auto name : allowed) known = known || key == name;
    if (known) continue;
    std::string expected;
    for (auto name : allowed) {
      if (!expected.empty()) expected += ", ";
      expected += name;
    }
    return Invalid(key + ": unknown argument (expected " +
                   (expected.empty() ? std::string("none") : expected) + ")");
  }
  return OkStatus();
}

Result<std::string> RequiredString(const json& args, std::string_view key, std::string_view what) {
  const std::string name(key);
  auto it = args.find(name);
  if (it == args.end()) return Invalid(name + ": required (" + std::string(what) + ")");
  if (!it->is_string()) return Invalid(name + ": expected a string");
  std::string value = it->get<std::string>();
  if (value.empty()) return Invalid(name + ": must not be empty");
  return value;
}

Result<std::optional<std::string>> OptionalString(const json& args, std::string_view key) {
  const std::string name(key);
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return Invalid(name + ": expected a string");
  return std::optional<std::string>(it->get<std::string>());
}

Result<std::optional<double>> OptionalPositiveNumber(const json& args, std::string_view key) {
  const std::string name(key);
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) return Invalid(name + ": expected a number");
  const double value = it->get<double>();
  if (!std::isfinite(value) || value <= 0) {
    return Invalid(name + ": expected a positive number");
  }
  return std::optional<double>(value);
}

Result<std::optional<std::int64_t>> OptionalPositiveInteger(const json& args,
                                                            std::string_view key) {
  const std::string name(key);
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return std::optional<std::int64_t>();
  if (!it->is_number()) return Invalid(name + ": expected an integer");
  auto integer = JsonInteger(*it);
  if (!integer) return Invalid(name + ": expected an integer that fits in 64 bits");
  const std::int64_t value = *integer;
  if (value <= 0) return Invalid(name + ": expected a positive integer");
  return std::optional<std::int64_t>(value);
}

Result<std::string> SessionIdArgument(const json& args) {
  auto id = RequiredString(args, "session_id", "the id session_create returned");
  if (!id.ok()) return id.error();
  bool valid = id->size() <= 128;
  for (char c : *id) {
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_');
  }
  if (!valid) {
    return Invalid("session_id: not a session id (expected the id session_create returned)");
  }
  return id;
}

json ToolError(const std::string& text) {
  return {{"content", {{{"type", "text"}, {"text", text}}}}, {"isError", true}};
}

json ToolSuccess(const std::string& text, json structured) {
  return {{"content", {{{"type", "text"}, {"text", text}}}},
          {"structuredContent", std::move(structured)},
          {"isError", false}};
}

std::string HumanSeconds(double seconds) {
  char buf[32];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  } else if (seconds < 7200) {
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  }
  return buf;
}

std::string ExactSeconds(std::int64_t seconds) {
  std::string out = std::to_string(seconds) + " s";
  if (seconds >= 120) out += " (" + HumanSeconds(static_cast<double>(seconds)) + ")";
  return out;
}

std::string Figure(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

}  // namespace sandbox::mcp::detail
