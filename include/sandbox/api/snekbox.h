// POST /eval, compatible with Snekbox (python-discord/snekbox): the request's meaning, the run
// it becomes, and the Snekbox-shaped answer built from the run's result. Pure functions; the
// HTTP handling is in http_api.h.
//
// Request {input?, args?, files?: [{path, content?}], executable_path?}, as Snekbox reads it:
// with `input`, `args` defaults to ["-c"] and `input` is appended to it; empty leading args are
// dropped; one of input/args is required; unknown fields are ignored. The Python command line
// is then `<python> *args`, mapped onto the engine like this:
//   - args == ["-c", CODE]: CODE runs as the run's code (the warm interpreter, nothing spawned).
//     Differences from `python -c`: sys.argv[0] is "<cell>" and tracebacks name the file
//     "<cell>" (Snekbox: "-c" and "<string>").
//   - anything else (a script from `files` with argv, -m timeit, -c CODE with extra argv,
//     interpreter flags, no args at all): a small launcher runs `sys.executable *args` as a
//     subprocess inside the same sandbox, in the working directory, with the run's stdout and
//     stderr inherited; its exit status becomes the run's (a death by signal N is re-raised, so
//     the answer says 128+N). So argv, `__main__`, -m and flags behave exactly as in Python.
// `executable_path` picks the pool whose interpreter it names (empty: the default pool);
// a path no pool answers to is a 400. File paths follow Snekbox: relative, normalized
// lexically ("a/../b" is "b"), never beyond the working directory, no NUL; content is base64
// (whitespace ignored).
//
// Response {stdout, returncode, files: [{path, size, content}]}: stdout is stdout and stderr
// merged in the order the engine delivered them (MergedOutput), decoded as UTF-8 with U+FFFD for
// invalid bytes (Snekbox answers null instead; here the run's real status is kept). returncode:
// the exit status for ok/error, 137 for the time or memory limit, 143 for too much output,
// 128+N for a death by signal N, null when the sandbox failed or the run was cancelled (stdout
// then carries the reason instead of output). files: sorted by path, hidden ones and names
// starting with '_' left out, as Snekbox does (SnekboxReturnsFile); /v1/execute and the MCP
// tool return every file.
//
// Thread-safety: stateless functions; OutputMerger is used by one run (the engine calls
// observers serially).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/api/api_error.h"
#include "sandbox/core/result.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/run_types.h"

namespace sandbox::api {

struct EvalPlan {
  exec::RunRequest request;
  // The request's executable_path ("" when absent): the service names the pool that answers
  // to it (ExecutionService::PoolForExecutable), which then runs the request.
  std::string executable;
  std::vector<std::string> args;  // the Python command line after Snekbox's rules
  bool launcher = false;          // true when the args run as a subprocess of a launcher
  // Set when the request can be answered without a run (Snekbox's "embedded null byte"): the
  // answer's stdout, returncode null.
  std::optional<std::string> immediate_failure;
};

// Parses a /eval body into `plan`; a refusal (status 400, title and message after Snekbox's,
// field set) otherwise.
std::optional<ApiError> ParseEvalRequest(const nlohmann::json& body, EvalPlan& plan);

// The launcher's source for `args` (see above).
std::string LauncherCode(const std::vector<std::string>& args);

// Snekbox's path rules: returns the normalized relative path, or a message.
Result<std::string> NormalizeSnekboxPath(std::string_view path);

// Whether /eval returns a file the run wrote, as Snekbox chooses them: no hidden component
// (".x"), and a name not starting with '_'. /eval sorts the returned files by path.
bool SnekboxReturnsFile(std::string_view path);

// Collects stdout and stderr in arrival order.
class OutputMerger final : public exec::RunObserver {
 public:
  void OnOutput(exec::Stream stream, std::string_view bytes) override;
  // The merged bytes, completed with any part of the result's stdout/stderr the observer did
  // not see (e.g. a marker added after the last chunk).
  std::string Merged(const exec::RunResult& result) const;

 private:
  std::string merged_;
  std::size_t stdout_seen_ = 0;
  std::size_t stderr_seen_ = 0;
};

// Snekbox's returncode for a result (see above); nullopt is JSON null.
std::optional<int> SnekboxReturnCode(const exec::RunResult& result);

// The /eval answer for a finished run. `merged_output` as from OutputMerger::Merged.
// `merged_output` as the code wrote it; bounded here like every answer's output
// (exec::BoundOutputText). With `name_engine`, also `engine`: the engine that ran it.
nlohmann::json EvalResponse(const exec::RunResult& result, std::string merged_output,
                            bool name_engine = false);

// The /eval answer when there was no run to report (a sandbox failure): returncode null.
nlohmann::json EvalFailure(std::string_view message);

// Snekbox-shaped error body: {title, description} plus this API's {error, field}.
nlohmann::json SnekboxErrorBody(std::string_view title, const ApiError& error);

}  // namespace sandbox::api
