#include "sandbox/mcp/log_level.h"

#include <array>
#include <utility>

namespace sandbox::mcp {
namespace {

constexpr std::array<std::pair<LogLevel, std::string_view>, 8> kNames = {{
    {LogLevel::kDebug, "debug"},
    {LogLevel::kInfo, "info"},
    {LogLevel::kNotice, "notice"},
    {LogLevel::kWarning, "warning"},
    {LogLevel::kError, "error"},
    {LogLevel::kCritical, "critical"},
    {LogLevel::kAlert, "alert"},
    {LogLevel::kEmergency, "emergency"},
}};

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  for (const auto& [l, name] : kNames) {
    if (l == level) return name;
  }
  return "info";
}

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (const auto& [l, n] : kNames) {
    if (n == name) return l;
  }
  return std::nullopt;
}

std::string_view LogLevelNames() {
  return "debug, info, notice, warning, error, critical, alert, emergency";
}

}  // namespace sandbox::mcp
