#include "sandbox/mcp/run_python_tool.h"

#include <cmath>
#include <cstdio>

#include "sandbox/core/base64.h"
#include "sandbox/mcp/random_id.h"
#include "sandbox/mcp/run_result_format.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

Error Invalid(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

std::string Figure(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

Result<exec::RunRequest> ParseArguments(const json& args) {
  exec::RunRequest request;
  for (const auto& [key, value] : args.items()) {
    if (key == "code") {
      if (!value.is_string()) return Invalid("code: expected a string");
      request.code = value.get<std::string>();
    } else if (key == "timeout_s") {
      if (!value.is_number()) return Invalid("timeout_s: expected a number");
      double timeout = value.get<double>();
      if (!std::isfinite(timeout) || timeout <= 0) {
        return Invalid("timeout_s: expected a positive number of seconds");
      }
      request.limits.timeout_s = timeout;
    } else if (key == "files") {
      if (!value.is_array()) return Invalid("files: expected an array of {path, content_base64}");
      for (std::size_t i = 0; i < value.size(); ++i) {
        const json& file = value[i];
        const std::string where = "files[" + std::to_string(i) + "]";
        if (!file.is_object())
          return Invalid(where + ": expected an object {path, content_base64}");
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
        request.files.push_back(
            exec::InputFile{file["path"].get<std::string>(), std::move(*bytes)});
      }
    } else if (key == "session_id") {
      return Invalid(
          "session_id: sessions are not available yet; omit session_id (each call "
          "runs in a fresh interpreter)");
    } else {
      return Invalid(key + ": unknown argument (expected code, timeout_s, files)");
    }
  }
  if (!args.contains("code")) return Invalid("code: required (a string of Python source)");
  return request;
}

}  // namespace

RunPythonTool::RunPythonTool(exec::ExecutionService& service, RunPythonOptions options)
    : service_(service), options_(options) {}

json RunPythonTool::Definition() const {
  const std::string description =
      "Run Python 3 code in an isolated sandbox and get back its stdout, stderr, the value of a "
      "final expression (like a notebook cell), a structured traceback on error, every "
      "matplotlib figure as a PNG image, and the files the code wrote.\n"
      "- Installed: numpy, pandas, matplotlib, scipy, sympy, pillow and the standard library. "
      "No network access: pip install and downloads fail.\n"
      "- Plots: draw with matplotlib and call plt.show() (or just leave figures open); each "
      "figure comes back as an image.\n"
      "- Files: pass input files with `files` ([{path, content_base64}], relative paths); files "
      "the code writes to its working directory are returned.\n"
      "- Each call starts a fresh interpreter: variables and files do not persist between "
      "calls.\n"
      "- Limits: " +
      Figure(options_.default_timeout_s) + " s wall time by default (timeout_s up to " +
      Figure(options_.max_timeout_s) + " s), " + std::to_string(options_.memory_bytes >> 20) +
      " MiB memory, " + std::to_string(options_.output_bytes >> 10) +
      " KiB of output. Output is streamed while the code runs when the client asks for "
      "progress.";
  json input = {
      {"type", "object"},
      {"properties",
       {{"code", {{"type", "string"}, {"description", "Python 3 source code to run"}}},
        {"timeout_s",
         {{"type", "number"},
          {"exclusiveMinimum", 0},
          {"maximum", options_.max_timeout_s},
          {"description",
           "wall-time limit in seconds (default " + Figure(options_.default_timeout_s) + ")"}}},
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
            {"additionalProperties", false}}}}}}},
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

Result<json> RunPythonTool::Call(const json& arguments, ToolContext& context) {
  auto request = ParseArguments(arguments);
  if (!request.ok()) return request.error();
  const std::string run_id = RandomHexId(8);
  OutputRelay relay(context.notifier, options_.relay);
  auto result = service_.Run(*request, relay, context.cancel);
  relay.Finish();
  if (!result.ok()) {
    if (result.error().code() == ErrorCode::kInvalidArgument) return result.error();
    // The engine refused (busy, unavailable): a tool failure the model can read and retry.
    exec::RunResult refused;
    refused.verdict = result.error().code() == ErrorCode::kCancelled ? exec::Verdict::kCancelled
                                                                     : exec::Verdict::kInternal;
    refused.detail = "the sandbox could not run the code: " + result.error().ToString();
    if (result.error().code() == ErrorCode::kBusy) {
      refused.detail += " (all sandboxes are busy; try again shortly)";
    }
    return FormatRunResult(refused, run_id);
  }
  return FormatRunResult(*result, run_id);
}

}  // namespace sandbox::mcp
