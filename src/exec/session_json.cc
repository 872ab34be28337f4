#include "sandbox/exec/session_json.h"

#include "sandbox/core/utf8.h"

namespace sandbox::exec {
namespace {

using json = nlohmann::json;

double Seconds(std::int64_t ms) { return static_cast<double>(ms) / 1000.0; }

}  // namespace

json SessionInfoJson(const SessionInfo& info) {
  return {{"session_id", RepairUtf8(info.id)},
          {"pool", RepairUtf8(info.pool)},
          {"created_unix_ms", info.created_unix_ms},
          {"age_s", Seconds(info.age_ms)},
          {"idle_s", Seconds(info.idle_ms)},
          {"expires_in_s", Seconds(info.expires_in_ms)},
          {"busy", info.busy},
          {"runs", info.runs},
          {"restarts", info.restarts},
          {"memory_bytes", info.memory_bytes ? json(*info.memory_bytes) : json(nullptr)},
          {"memory_limit_bytes", info.memory_limit_bytes},
          {"timeout_s", info.timeout_s},
          {"output_bytes", info.output_bytes}};
}

json SessionFileJson(const SessionFile& file) {
  return {{"path", RepairUtf8(file.path)},
          {"size", file.size},
          {"mime_type", file.mime_type.empty() ? "application/octet-stream" : file.mime_type},
          {"mtime_unix_s", file.mtime_unix_s}};
}

json SessionInfoSchema() {
  auto described = [](const char* type, const char* description) {
    return json{{"type", type}, {"description", description}};
  };
  return {
      {"type", "object"},
      {"properties",
       {{"session_id", described("string", "pass it to run_python and the session_* tools")},
        {"pool", described("string", "the pool the session's container came from")},
        {"created_unix_ms", described("integer", "creation time, Unix milliseconds")},
        {"age_s", described("number", "seconds since creation")},
        {"idle_s", described("number", "seconds since the last call ended (0 while busy)")},
        {"expires_in_s",
         described("number", "seconds until the idle timeout or the lifetime ends it")},
        {"busy", described("boolean", "a call is running in it now")},
        {"runs", described("integer", "runs served since creation")},
        {"restarts", described("integer", "times it was restarted empty after a limit kill")},
        {"memory_bytes",
         {{"type", {"integer", "null"}}, {"description", "memory in use; null when unknown"}}},
        {"memory_limit_bytes", described("integer", "memory limit, fixed at creation")},
        {"timeout_s", described("number", "default wall-time limit of one run")},
        {"output_bytes", described("integer", "default output limit of one run")}}},
      {"required",
       {"session_id", "pool", "created_unix_ms", "age_s", "idle_s", "expires_in_s", "busy", "runs",
        "restarts", "memory_bytes", "memory_limit_bytes", "timeout_s", "output_bytes"}}};
}

json SessionFileSchema() {
  return {{"type", "object"},
          {"properties",
           {{"path", {{"type", "string"}, {"description", "relative to the working directory"}}},
            {"size", {{"type", "integer"}}},
            {"mime_type", {{"type", "string"}}},
            {"mtime_unix_s", {{"type", "number"}}}}},
          {"required", {"path", "size", "mime_type", "mtime_unix_s"}}};
}

}  // namespace sandbox::exec
