// The JSON shapes of sessions and session files that both protocol layers return (the MCP
// session tools' structuredContent and the HTTP API's /v1/sessions bodies), so they never drift:
//
//   session: {session_id, pool, created_unix_ms, age_s, idle_s, expires_in_s, busy, runs,
//             restarts, memory_bytes (null when unknown), memory_limit_bytes, timeout_s,
//             output_bytes}
//   file:    {path, size, mime_type, mtime_unix_s}
//
// Durations are seconds with millisecond precision. Strings are made valid UTF-8.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "sandbox/exec/session_service.h"

namespace sandbox::exec {

nlohmann::json SessionInfoJson(const SessionInfo& info);
nlohmann::json SessionFileJson(const SessionFile& file);

// JSON Schemas of the two shapes (for MCP outputSchema and OpenAPI).
nlohmann::json SessionInfoSchema();
nlohmann::json SessionFileSchema();

}  // namespace sandbox::exec
