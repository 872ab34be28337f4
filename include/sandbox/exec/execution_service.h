// The seam between the protocol layers (MCP, HTTP API) and the execution engine. The protocol
// layers depend on this interface only; the engine implements it on top of Docker, and unit
// tests of the protocol layers use a fake.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/exec/cancel_token.h"
#include "sandbox/exec/run_types.h"

namespace sandbox::exec {

// Receives a run's events while it runs. Called from an engine thread, in order, never
// concurrently for one run; implementations must not block for long (they delay the run's
// output relay). Output chunks arrive at least every 100 ms while the code writes output.
// A line the run's code asked for (input(), sys.stdin.readline()): the n-th ask of the run, and
// the prompt input() printed (empty when the code read stdin without one).
struct InputRequest {
  int seq = 0;
  std::string prompt;
};
// Answers one InputRequest with a line, or EOF (nullopt). Callable once, from any thread, at any
// time; a no-op once the run has ended.
using InputReply = std::function<void(std::optional<std::string> line)>;

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnStarted() {}
  virtual void OnOutput(Stream /*stream*/, std::string_view /*bytes*/) {}
  virtual void OnImage(const Image& /*image*/) {}
  virtual void OnFile(const OutputFile& /*file*/) {}
  // Whether this observer answers the run's stdin. When it does and the pool allows it (config
  // pools[].interactive_input), the code's reads of stdin ask OnInputRequest; otherwise they get
  // EOF at once, as from /dev/null.
  virtual bool AnswersInput() const { return false; }
  // Must not wait for the answer: the reply may come later, from another thread, while the run's
  // wall-time limit keeps counting.
  virtual void OnInputRequest(const InputRequest& /*request*/, InputReply reply) {
    reply(std::nullopt);
  }
};

// What sandbox_info reports: interpreter, packages, limits and pools. Kept as JSON because it
// is descriptive data the protocol layers pass through.
struct ServiceInfo {
  nlohmann::json info;
};

// Thread-safety: implementations are safe to call from many threads at once.
class ExecutionService {
 public:
  virtual ~ExecutionService() = default;

  // Runs one request to completion. A result with any verdict is a success of this call;
  // an Error means the request was refused (kInvalidArgument, kBusy when no sandbox could be
  // had in time, kUnavailable when the engine is down). `cancel` may fire at any moment; the
  // run then ends within one second with verdict kCancelled.
  virtual Result<RunResult> Run(const RunRequest& request, RunObserver& observer,
                                const CancelToken& cancel) = 0;

  virtual Result<ServiceInfo> Info() = 0;

  // The pool that answers to an interpreter path (Snekbox's `executable_path`): each pool
  // declares its paths (config `executables`), and also answers to
  // /snekbin/python/<major.minor>/bin/python once it knows its interpreter's version.
  // kInvalidArgument naming the paths that are served when none answers.
  virtual Result<std::string> PoolForExecutable(const std::string& path) = 0;
};

}  // namespace sandbox::exec
