#include "sandbox/api/snekbox.h"

#include <algorithm>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/core/utf8.h"
#include "sandbox/exec/answer_bound.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;

constexpr const char* kSchemaTitle = "Request data failed validation";
constexpr const char* kFileTitle = "Request file is invalid";

ApiError Refuse(std::string field, std::string message, const char* title = kSchemaTitle) {
  ApiError error;
  error.status = 400;
  error.field = std::move(field);
  error.message = std::move(message);
  error.title = title;
  return error;
}

std::string TypeName(const json& value) { return value.type_name(); }

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

Result<std::string> NormalizeSnekboxPath(std::string_view path) {
  const std::string quoted = "'" + std::string(path) + "'";
  if (path.find('\0') != std::string_view::npos) {
    return Error(ErrorCode::kInvalidArgument, "File path " + quoted + " contains a NUL byte");
  }
  if (!path.empty() && path.front() == '/') {
    return Error(ErrorCode::kInvalidArgument, "File path " + quoted + " must be relative");
  }
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "..") {
      if (parts.empty()) {
        return Error(ErrorCode::kInvalidArgument,
                     "File path " + quoted + " may not traverse beyond root");
      }
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  if (parts.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "File path " + quoted + " names the working directory, not a file");
  }
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

std::string LauncherCode(const std::vector<std::string>& args) {
  // A JSON array of strings is a valid Python list literal (raw UTF-8, control characters as
  // \u00XX escapes, which Python reads the same way).
  const std::string literal = json(args).dump(-1, ' ', false);
  return "import os, signal, subprocess, sys\n"
         "_status = subprocess.run([sys.executable] + " +
         literal +
         ").returncode\n"
         "if _status < 0:\n"
         "    try:\n"
         "        signal.signal(-_status, signal.SIG_DFL)\n"
         "    except (OSError, ValueError):\n"
         "        pass\n"
         "    os.kill(os.getpid(), -_status)\n"
         "    _status = 128 - _status\n"
         "sys.exit(_status)\n";
}

std::optional<ApiError> ParseEvalRequest(const json& body, EvalPlan& plan) {
  plan = EvalPlan{};
  if (!body.is_object()) {
    return Refuse("", "the body must be a JSON object, got " + TypeName(body));
  }
  std::optional<std::string> input;
  std::optional<std::vector<std::string>> args;
  if (auto it = body.find("input"); it != body.end()) {
    if (!it->is_string()) return Refuse("input", "input: expected a string, got " + TypeName(*it));
    input = it->get<std::string>();
  }
  if (auto it = body.find("args"); it != body.end()) {
    if (!it->is_array()) {
      return Refuse("args", "args: expected an array of strings, got " + TypeName(*it));
    }
    args.emplace();
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& arg = (*it)[i];
      if (!arg.is_string()) {
        return Refuse("args[" + std::to_string(i) + "]",
                      "args[" + std::to_string(i) + "]: expected a string, got " + TypeName(arg));
      }
      args->push_back(arg.get<std::string>());
    }
  }
  if (!input && !args) {
    return Refuse("input", "either input (code) or args (a Python command line) is required");
  }
  if (auto it = body.find("executable_path"); it != body.end()) {
    if (!it->is_string()) {
      return Refuse("executable_path", "executable_path: expected a string, got " + TypeName(*it));
    }
    plan.executable = it->get<std::string>();
  }
  if (auto it = body.find("files"); it != body.end()) {
    if (!it->is_array()) {
      return Refuse("files", "files: expected an array of {path, content}, got " + TypeName(*it));
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& file = (*it)[i];
      const std::string where = "files[" + std::to_string(i) + "]";
      if (!file.is_object()) {
        return Refuse(where, where + ": expected an object {path, content}, got " + TypeName(file));
      }
      auto path = file.find("path");
      if (path == file.end() || !path->is_string()) {
        return Refuse(where + ".path", where + ".path: required, a string");
      }
      auto normalized = NormalizeSnekboxPath(path->get<std::string>());
      if (!normalized.ok()) {
        // Snekbox's schema refuses an absolute path before its file checks run.
        const bool absolute = path->get<std::string>().rfind('/', 0) == 0;
        return Refuse(where + ".path", normalized.error().message(),
                      absolute ? kSchemaTitle : kFileTitle);
      }
      std::string content;
      if (auto c = file.find("content"); c != file.end()) {
        if (!c->is_string()) {
          return Refuse(where + ".content",
                        where + ".content: expected a base64 string, got " + TypeName(*c));
        }
        std::string text = c->get<std::string>();
        text.erase(std::remove_if(text.begin(), text.end(), IsWhitespace), text.end());
        auto decoded = Base64Decode(text);
        if (!decoded.ok()) {
          return Refuse(where + ".content",
                        "Invalid base64 encoding for file '" + *normalized + "'", kFileTitle);
        }
        content = std::move(*decoded);
      }
      plan.request.files.push_back(exec::InputFile{std::move(*normalized), std::move(content)});
    }
  }

  std::vector<std::string> command = args.value_or(std::vector<std::string>{});
  if (input) {
    if (!args) command = {"-c"};
    command.push_back(*input);
  }
  // Snekbox drops empty leading arguments (iter_lstrip).
  auto first =
      std::find_if(command.begin(), command.end(), [](const std::string& a) { return !a.empty(); });
  command.erase(command.begin(), first);
  plan.args = command;
  for (const auto& arg : command) {
    if (arg.find('\0') != std::string::npos) {
      plan.immediate_failure = "ValueError: embedded null byte";
      return std::nullopt;
    }
  }
  if (command.size() == 2 && command[0] == "-c") {
    plan.request.code = command[1];
  } else {
    plan.launcher = true;
    plan.request.code = LauncherCode(command);
  }
  return std::nullopt;
}

void OutputMerger::OnOutput(exec::Stream stream, std::string_view bytes) {
  merged_.append(bytes);
  (stream == exec::Stream::kStdout ? stdout_seen_ : stderr_seen_) += bytes.size();
}

std::string OutputMerger::Merged(const exec::RunResult& result) const {
  std::string out = merged_;
  if (result.stdout_text.size() > stdout_seen_) out += result.stdout_text.substr(stdout_seen_);
  if (result.stderr_text.size() > stderr_seen_) out += result.stderr_text.substr(stderr_seen_);
  return out;
}

bool SnekboxReturnsFile(std::string_view path) {
  // Snekbox globs "**/[!_]*" without hidden entries: no component may start with '.', and the
  // file's own name not with '_'.
  std::size_t start = 0;
  while (start < path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path[start] == '.') return false;
    if (end == path.size() && path[start] == '_') return false;
    start = end + 1;
  }
  return !path.empty();
}

std::optional<int> SnekboxReturnCode(const exec::RunResult& result) {
  switch (result.verdict) {
    case exec::Verdict::kOk:
    case exec::Verdict::kError:
      if (result.exit_code >= 0) return result.exit_code;
      return std::nullopt;  // never ran (e.g. rejected input files)
    case exec::Verdict::kMemory:
      // A child killed at the limit while the code itself ended normally: Snekbox reports
      // the code's own status.
      if (result.exit_code >= 0 && !result.signal) return result.exit_code;
      return 128 + 9;
    case exec::Verdict::kTimeout:
      return 128 + 9;  // SIGKILL, as NsJail's limits give
    case exec::Verdict::kOutputLimit:
      return 128 + 15;  // SIGTERM, as Snekbox stops a run that writes too much
    case exec::Verdict::kSignal:
      if (result.signal) return 128 + *result.signal;
      return std::nullopt;
    case exec::Verdict::kCancelled:
    case exec::Verdict::kInternal:
      return std::nullopt;
  }
  return std::nullopt;
}

json EvalFailure(std::string_view message) {
  return {{"stdout", RepairUtf8(message)}, {"returncode", nullptr}, {"files", json::array()}};
}

json EvalResponse(const exec::RunResult& result, std::string merged_output, bool name_engine) {
  const auto code = SnekboxReturnCode(result);
  if (!code) {
    std::string reason = result.detail;
    if (result.verdict == exec::Verdict::kCancelled) {
      reason =
          "cancelled: " + (reason.empty() ? std::string("the server is shutting down") : reason);
    } else if (reason.empty()) {
      reason = "sandbox failure (verdict " + std::string(exec::VerdictName(result.verdict)) + ")";
    }
    return EvalFailure(reason);
  }
  std::vector<const exec::OutputFile*> returned;
  for (const auto& file : result.files) {
    if (SnekboxReturnsFile(file.path)) returned.push_back(&file);
  }
  std::sort(returned.begin(), returned.end(),
            [](const exec::OutputFile* a, const exec::OutputFile* b) { return a->path < b->path; });
  json files = json::array();
  for (const auto* file : returned) {
    files.push_back({{"path", RepairUtf8(file->path)},
                     {"size", static_cast<std::int64_t>(file->data.size())},
                     {"content", Base64Encode(file->data)}});
  }
  exec::BoundOutputText(merged_output);
  json body = {
      {"stdout", std::move(merged_output)}, {"returncode", *code}, {"files", std::move(files)}};
  // Beyond Snekbox's fields, on a server of several engines only: where the code ran.
  if (name_engine && !result.engine.empty()) body["engine"] = RepairUtf8(result.engine);
  return body;
}

json SnekboxErrorBody(std::string_view title, const ApiError& error) {
  json body = {{"title", title.empty() ? std::string(kSchemaTitle) : std::string(title)},
               {"description", error.message},
               {"error", error.message}};
  body["field"] = error.field.empty() ? json(nullptr) : json(error.field);
  return body;
}

}  // namespace sandbox::api
