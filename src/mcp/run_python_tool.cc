#include "sandbox/mcp/run_python_tool.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "run_result_format.h"
#include "sandbox/core/base64.h"
#include "sandbox/core/random_id.h"
#include "task_stdin.h"
#include "tool_args.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
using detail::Figure;
using detail::Invalid;

struct ParsedCall {
  exec::RunRequest request;
  std::optional<std::string> session_id;
};

Result<ParsedCall> ParseArguments(const json& args, const std::vector<PoolChoice>& pools) {
  std::vector<std::string_view> known = {"code",         "timeout_s", "memory_bytes",
                                         "output_bytes", "files",     "session_id"};
  if (pools.size() > 1) known.emplace_back("pool");
  const bool networked = std::any_of(pools.begin(), pools.end(),
                                     [](const PoolChoice& p) { return p.network != "none"; });
  if (networked) known.emplace_back("network");
  SANDBOX_RETURN_IF_ERROR(detail::CheckArguments(args, known));
  ParsedCall call;
  exec::RunRequest& request = call.request;
  auto code = args.find("code");
  if (code == args.end()) return Invalid("code: required (a string of Python source)");
  if (!code->is_string()) return Invalid("code: expected a string");
  request.code = code->get<std::string>();
  auto timeout = detail::OptionalPositiveNumber(args, "timeout_s");
  if (!timeout.ok()) {
    return Invalid(args["timeout_s"].is_number()
                       ? "timeout_s: expected a positive number of seconds"
                       : "timeout_s: expected a number");
  }
  request.limits.timeout_s = *timeout;
  auto memory = detail::OptionalPositiveInteger(args, "memory_bytes");
  if (!memory.ok()) return memory.error();
  request.limits.memory_bytes = *memory;
  auto output = detail::OptionalPositiveInteger(args, "output_bytes");
  if (!output.ok()) return output.error();
  request.limits.output_bytes = *output;
  if (auto files = args.find("files"); files != args.end()) {
    const json& value = *files;
    if (!value.is_array()) return Invalid("files: expected an array of {path, content_base64}");
    for (std::size_t i = 0; i < value.size(); ++i) {
      const json& file = value[i];
      const std::string where = "files[" + std::to_string(i) + "]";
      if (!file.is_object()) return Invalid(where + ": expected an object {path, content_base64}");
      for (const auto& [field, ignored] : file.items()) {
        if (field != "path" && field != "content_base64") {
          return Invalid(where + "." + field + ": unknown field (expected path, content_base64)");
        }
      }
      if (!file.contains("path") || !file["path"].is_string()) {
        return Invalid(where + ".path: expected a string");
      }
      if (!file.contains("content_base64") || !file["content_base64"].is_string()) {
        return Invalid(where + ".content_base64: expected a string");
      }
      auto bytes = Base64Decode(file["content_base64"].get<std::string>());
      if (!bytes.ok()) return Invalid(where + ".content_base64: " + bytes.error().message());
      request.files.push_back(exec::InputFile{file["path"].get<std::string>(), std::move(*bytes)});
    }
  }
  if (auto network = args.find("network"); network != args.end()) {
    auto parsed = exec::ParseNetworkRequest(*network);
    if (!parsed.ok()) return parsed.error();
    request.network = std::move(*parsed);
  }
  if (args.contains("session_id")) {
    auto id = detail::SessionIdArgument(args);
    if (!id.ok()) return id.error();
    call.session_id = std::move(*id);
  }
  if (auto pool = args.find("pool"); pool != args.end()) {
    const bool known_pool =
        pool->is_string() && std::any_of(pools.begin(), pools.end(), [&](const PoolChoice& p) {
          return p.name == pool->get<std::string>();
        });
    if (!known_pool) {
      std::string names;
      for (const auto& p : pools) names += (names.empty() ? "\"" : ", \"") + p.name + "\"";
      return Invalid("pool: expected one of " + names);
    }
    if (call.session_id) {
      return Invalid("pool: a session runs in the pool it was created in; omit pool here");
    }
    request.pool = pool->get<std::string>();
  }
  return call;
}

}  // namespace

RunPythonTool::RunPythonTool(exec::ExecutionService& service, RunPythonOptions options)
    : RunPythonTool(service, nullptr, std::move(options)) {}

RunPythonTool::RunPythonTool(exec::ExecutionService& service, exec::SessionService* sessions,
                             RunPythonOptions options)
    : service_(service), sessions_(sessions), options_(std::move(options)) {}

json RunPythonTool::Definition() const {
  std::string description =
      "Run Python 3 code in an isolated sandbox and get back its stdout, stderr, the value of a "
      "final expression (like a notebook cell), a structured traceback on error, every "
      "matplotlib figure as a PNG image, and the files the code wrote.\n"
      "- Installed: numpy, pandas, matplotlib, scipy, sympy, pillow and the standard library.\n"
      "- Plots: draw with matplotlib and call plt.show() (or just leave figures open); each "
      "figure comes back as an image.\n"
      "- Files: pass input files with `files` ([{path, content_base64}], relative paths); files "
      "the code writes to its working directory are returned.\n";
  const std::string network = options_.pools.empty() ? "none" : options_.pools.front().network;
  if (network == "none") {
    description += "- No network access: pip install and downloads fail.\n";
  } else {
    // The proxy settings are in the environment: pip, urllib, requests and curl use them.
    description += "- Network: only through the sandbox's egress proxy, to what its " +
                   std::string("policy allows (") + network +
                   "); anything else is refused with a 403 naming the policy. pip install "
                   "works when its index is allowed.\n";
  }
  if (sessions_ == nullptr) {
    description +=
        "- Each call starts a fresh interpreter: variables and files do not persist between "
        "calls.\n";
  } else {
    const SessionToolOptions& s = options_.sessions;
    description +=
        "- Without session_id each call starts a fresh interpreter: nothing persists. To keep "
        "state across calls (load data once, then explore it step by step), call "
        "session_create and pass its session_id here: variables, imports and files in the "
        "working directory persist from call to call. Upload inputs with session_upload_file, "
        "list files with session_list_files, fetch one with session_download_file. A session "
        "closes after " +
        detail::ExactSeconds(s.idle_timeout.count()) +
        " without a call; close it with session_close when done. A run killed by a limit "
        "(timeout, memory, output) restarts its session empty and the result says so. In a "
        "session, memory_bytes is fixed at session_create.\n";
  }
  description += "- Limits: " + Figure(options_.default_timeout_s) +
                 " s wall time by default (timeout_s up to " + Figure(options_.max_timeout_s) +
                 " s), " + std::to_string(options_.memory_bytes >> 20) + " MiB memory, " +
                 std::to_string(options_.output_bytes >> 10) +
                 " KiB of output. Output is streamed while the code runs when the client asks "
                 "for progress.";
  json properties = {
      {"code", {{"type", "string"}, {"description", "Python 3 source code to run"}}},
      {"timeout_s",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"maximum", options_.max_timeout_s},
        {"description",
         "wall-time limit in seconds (default " + Figure(options_.default_timeout_s) + ")"}}},
      {"memory_bytes",
       {{"type", "integer"},
        {"minimum", 1},
        {"description", "memory limit in bytes, at most the pool's (not in a session)"}}},
      {"output_bytes",
       {{"type", "integer"},
        {"minimum", 1},
        {"description",
         "stdout+stderr limit in bytes (default " + std::to_string(options_.output_bytes) + ")"}}},
      {"files",
       {{"type", "array"},
        {"description", "files placed in the working directory before the code runs"},
        {"items",
         {{"type", "object"},
          {"properties",
           {{"path", {{"type", "string"}, {"description", "relative path, e.g. data/input.csv"}}},
            {"content_base64",
             {{"type", "string"}, {"description", "file content, standard base64"}}}}},
          {"required", {"path", "content_base64"}},
          {"additionalProperties", false}}}}}};
  if (options_.pools.size() > 1) {
    std::string about = "the pool to run in (default \"" + options_.pools.front().name + "\")";
    json names = json::array();
    for (const auto& pool : options_.pools) {
      names.push_back(pool.name);
      if (pool.network != options_.pools.front().network) {
        about += "; \"" + pool.name + "\" network: " + pool.network;
      }
      if (pool.adds.empty()) continue;
      std::string adds;
      for (const auto& package : pool.adds) adds += (adds.empty() ? "" : ", ") + package;
      about += "; \"" + pool.name + "\" also has " + adds;
    }
    properties["pool"] = {{"type", "string"}, {"enum", names}, {"description", about}};
  }
  if (std::any_of(options_.pools.begin(), options_.pools.end(),
                  [](const PoolChoice& p) { return p.network != "none"; })) {
    properties["network"] = exec::NetworkRequestSchema();
  }
  if (sessions_ != nullptr) {
    properties["session_id"] = {
        {"type", "string"},
        {"description",
         "run in this persistent session (from session_create) instead of a fresh interpreter"}};
  }
  json input = {{"type", "object"},
                {"properties", properties},
                {"required", {"code"}},
                {"additionalProperties", false}};
  return {{"name", name()},
          {"title", "Run Python"},
          {"description", description},
          {"inputSchema", input},
          {"outputSchema", RunPythonOutputSchema()},
          {"annotations",
           {{"title", "Run Python"},
            {"readOnlyHint", false},
            {"destructiveHint", false},
            {"idempotentHint", false},
            {"openWorldHint", false}}}};
}

namespace {

// The arguments, and what they ask of this server (sessions), checked before anything runs.
Result<ParsedCall> CheckCall(const json& arguments, const std::vector<PoolChoice>& pools,
                             bool sessions_enabled) {
  auto call = ParseArguments(arguments, pools);
  if (!call.ok()) return call.error();
  if (call->session_id) {
    if (!sessions_enabled) {
      return Invalid(
          "session_id: sessions are disabled on this server (sessions.enabled is false); omit "
          "session_id (each call then runs in a fresh interpreter)");
    }
    if (call->request.limits.memory_bytes) {
      return Invalid(
          "memory_bytes: a session's memory limit is fixed when it is created; omit "
          "memory_bytes here, or create a session with the memory you need "
          "(session_create's memory_bytes)");
    }
  }
  return call;
}

}  // namespace

Result<std::optional<json>> RunPythonTool::Prepare(const json& arguments,
                                                   ToolContext& /*context*/) {
  auto call = CheckCall(arguments, options_.pools, sessions_ != nullptr);
  if (!call.ok()) return call.error();
  return std::optional<json>();
}

Result<json> RunPythonTool::Call(const json& arguments, ToolContext& context) {
  auto call = CheckCall(arguments, options_.pools, sessions_ != nullptr);
  if (!call.ok()) return call.error();
  call->request.principal = context.principal;
  const std::string run_id = RandomHexId(8);
  OutputRelay relay(context.notifier, options_.relay);
  // A task whose client answers forms may ask it for stdin (where the pool allows it).
  std::optional<TaskStdin> stdin_bridge;
  if (context.task != nullptr && context.meta != nullptr && context.meta->HasFormElicitation()) {
    stdin_bridge.emplace(relay, *context.task);
  }
  exec::RunObserver& observer =
      stdin_bridge ? static_cast<exec::RunObserver&>(*stdin_bridge) : relay;
  auto result = call->session_id ? sessions_->Run(context.principal, *call->session_id,
                                                  call->request, observer, context.cancel)
                                 : service_.Run(call->request, observer, context.cancel);
  relay.Finish();
  if (!result.ok()) {
    if (result.error().code() == ErrorCode::kInvalidArgument) return result.error();
    // The engine refused (busy, unavailable, no such session): a tool failure the model can
    // read and act on.
    exec::RunResult refused;
    refused.verdict = result.error().code() == ErrorCode::kCancelled ? exec::Verdict::kCancelled
                                                                     : exec::Verdict::kInternal;
    if (call->session_id) {
      refused.session_id = *call->session_id;
      refused.detail = "the session could not run the code: " +
                       SessionFailureText(result.error(), *call->session_id, options_.sessions);
    } else {
      if (result.error().code() == ErrorCode::kRateLimited) {
        refused.detail =
            "the code was not run: " + SessionFailureText(result.error(), "", options_.sessions);
      } else {
        refused.detail = "the sandbox could not run the code: " + result.error().ToString();
      }
      if (result.error().code() == ErrorCode::kBusy) {
        refused.detail += " (all sandboxes are busy; try again shortly)";
      }
    }
    return FormatRunResult(std::move(refused), run_id);
  }
  if (call->session_id && result->session_id.empty()) result->session_id = *call->session_id;
  // The answer's bytes are held from here until the transport has sent it (Outbound::Hold).
  auto held = exec::ReserveAnswer(options_.answers, *result);
  if (!held.ok()) {
    exec::RunResult refused;
    refused.verdict = exec::Verdict::kInternal;
    refused.session_id = result->session_id;
    refused.duration_ms = result->duration_ms;
    refused.detail = "the code ran (verdict " + std::string(exec::VerdictName(result->verdict)) +
                     ") but its answer was not sent: " + held.error().message();
    return FormatRunResult(std::move(refused), run_id);
  }
  context.notifier.Hold(std::move(*held));
  return FormatRunResult(std::move(*result), run_id);
}

}  // namespace sandbox::mcp
