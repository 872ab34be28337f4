#include "sandbox/core/utf8.h"
#include "sandbox/exec/session_json.h"
#include "sandbox/mcp/session_tools.h"
#include "tool_args.h"

namespace sandbox::mcp {

using json = nlohmann::json;

json SessionCreateTool::Definition() const {
  const std::string idle = detail::ExactSeconds(options_.idle_timeout.count());
  const std::string lifetime = detail::ExactSeconds(options_.max_lifetime.count());
  const std::string description =
      "Start a persistent Python session: a sandbox of its own whose variables, imports and files "
      "persist from one run_python call to the next. Use it to load data once and work on it "
      "over several calls, or to keep files between calls.\n"
      "- Returns session_id: pass it to run_python (session_id) to run code in the session, and "
      "to session_upload_file, session_list_files, session_download_file and session_close.\n"
      "- Files written by the code (or uploaded) stay in the session's working directory; "
      "read them back with relative paths.\n"
      "- Optional: pool, and the defaults of each run: timeout_s (default " +
      detail::Figure(options_.default_timeout_s) + " s, up to " +
      detail::Figure(options_.max_timeout_s) + " s; run_python may still pass its own), " +
      "output_bytes, and memory_bytes (default " + detail::HumanBytes(options_.memory_bytes) +
      ", fixed for the session's lifetime).\n"
      "- The session closes by itself after " +
      idle + " without a call, and at the latest " + lifetime + " after creation. At most " +
      std::to_string(options_.max_per_principal) +
      " sessions per client at once: close a session with session_close when done.\n"
      "- A run killed by a limit (timeout, memory, output) restarts its session empty, and its "
      "result says so: re-run the set-up (imports, loading data) before going on.";
  json info_schema = exec::SessionInfoSchema();
  info_schema["properties"]["idle_timeout_s"] = {
      {"type", "number"}, {"description", "the session closes after this long without a call"}};
  info_schema["properties"]["max_lifetime_s"] = {
      {"type", "number"}, {"description", "the session closes this long after creation"}};
  json input = {
      {"type", "object"},
      {"properties",
       {{"pool",
         {{"type", "string"}, {"description", "a configured pool; the default pool if omitted"}}},
        {"timeout_s",
         {{"type", "number"},
          {"exclusiveMinimum", 0},
          {"maximum", options_.max_timeout_s},
          {"description", "default wall-time limit of each run, in seconds"}}},
        {"memory_bytes",
         {{"type", "integer"},
          {"minimum", 1},
          {"description", "memory limit of the session's runs, in bytes; fixed at creation"}}},
        {"output_bytes",
         {{"type", "integer"},
          {"minimum", 1},
          {"description", "default stdout+stderr limit of each run, in bytes"}}},
        {"network", exec::NetworkRequestSchema()}}},
      {"additionalProperties", false}};
  return {{"name", name()},
          {"title", "Create a Python session"},
          {"description", description},
          {"inputSchema", input},
          {"outputSchema", info_schema},
          {"annotations",
           {{"title", "Create a Python session"},
            {"readOnlyHint", false},
            {"destructiveHint", false},
            {"idempotentHint", false},
            {"openWorldHint", false}}}};
}

Result<json> SessionCreateTool::Call(const json& arguments, ToolContext& context) {
  SANDBOX_RETURN_IF_ERROR(detail::CheckArguments(
      arguments, {"pool", "timeout_s", "memory_bytes", "output_bytes", "network"}));
  exec::SessionCreateRequest request;
  auto pool = detail::OptionalString(arguments, "pool");
  if (!pool.ok()) return pool.error();
  request.pool = pool->value_or("");
  auto timeout = detail::OptionalPositiveNumber(arguments, "timeout_s");
  if (!timeout.ok()) return timeout.error();
  request.limits.timeout_s = *timeout;
  auto memory = detail::OptionalPositiveInteger(arguments, "memory_bytes");
  if (!memory.ok()) return memory.error();
  request.limits.memory_bytes = *memory;
  auto output = detail::OptionalPositiveInteger(arguments, "output_bytes");
  if (!output.ok()) return output.error();
  request.limits.output_bytes = *output;
  if (auto network = arguments.find("network"); network != arguments.end()) {
    auto parsed = exec::ParseNetworkRequest(*network);
    if (!parsed.ok()) return parsed.error();
    request.network = std::move(*parsed);
  }

  auto info = sessions_.Create(context.principal, request);
  if (!info.ok()) {
    std::string hint;
    if (info.error().code() == ErrorCode::kLimit &&
        info.error().message().find("session_close") == std::string::npos) {
      hint =
          "\nClose a session you no longer need with session_close (session_list shows "
          "yours), or reuse one of them with run_python's session_id.";
    }
    return SessionToolFailure(info.error(), "", options_, hint);
  }
  json structured = exec::SessionInfoJson(*info);
  structured["idle_timeout_s"] = options_.idle_timeout.count();
  structured["max_lifetime_s"] = options_.max_lifetime.count();
  const std::string id = RepairUtf8(info->id);
  const std::string text =
      "Session " + id + " created (pool " + RepairUtf8(info->pool) + ").\n" +
      "Run code in it with run_python and \"session_id\": \"" + id +
      "\": variables, imports and files in its working directory persist between calls.\n"
      "Each run: " +
      detail::Figure(info->timeout_s) + " s wall time by default, " +
      detail::HumanBytes(info->memory_limit_bytes) + " memory (fixed for this session), " +
      detail::HumanBytes(info->output_bytes) + " of output.\n" + "It closes after " +
      detail::ExactSeconds(options_.idle_timeout.count()) + " without a call (now: expires in " +
      detail::HumanSeconds(static_cast<double>(info->expires_in_ms) / 1e3) +
      "); close it with session_close when done.";
  return detail::ToolSuccess(text, std::move(structured));
}

}  // namespace sandbox::mcp
