// MCP logging levels (RFC 5424 severities) for notifications/message and logging/setLevel.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <optional>
#include <string_view>

namespace sandbox::mcp {

// Ordered by severity: a client that sets kWarning receives kWarning and above.
enum class LogLevel { kDebug, kInfo, kNotice, kWarning, kError, kCritical, kAlert, kEmergency };

std::string_view LogLevelName(LogLevel level);
std::optional<LogLevel> ParseLogLevel(std::string_view name);

// "debug, info, notice, warning, error, critical, alert, emergency" (for error messages).
std::string_view LogLevelNames();

}  // namespace sandbox::mcp
