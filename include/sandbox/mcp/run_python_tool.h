// The run_python tool: runs code through the ExecutionService (or, with session_id, in that
// session through the SessionService), relays its live output as notifications, and returns the
// result formatted by FormatRunResult.
// Arguments: code (string, required), timeout_s (number > 0), memory_bytes and output_bytes
// (integers > 0; the engine refuses values above the pool's maxima), files ([{path,
// content_base64}]), session_id (a session of the caller's principal), pool (with several
// pools: which one runs the code; not with session_id, whose pool is fixed at creation). Unknown
// arguments are refused. In a session call memory_bytes is refused (a session's memory is fixed at
// creation); without a SessionService (sessions disabled) session_id is refused with a clear
// message. SessionService refusals other than invalid input (not found, busy, limits) are results
// with isError: true and verdict internal, whose text says what to do next. Thread-safety: Call()
// may run on many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/exec/answer_bound.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/mcp/output_relay.h"
#include "sandbox/mcp/session_tools.h"
#include "sandbox/mcp/tool.h"

namespace sandbox::mcp {

// A pool a call may name in `pool`, and what its image adds to the default one.
struct PoolChoice {
  std::string name;
  std::vector<std::string> adds;  // e.g. {"python3-sklearn"}: its extra packages
  // What its code may reach: "none" or "allowlist: pypi.org ..." (DescribeNetworkPolicy).
  std::string network = "none";
};

// Figures shown in the tool description, so a model knows its limits up front.
struct RunPythonOptions {
  double default_timeout_s = 30;
  double max_timeout_s = 300;
  std::int64_t memory_bytes = 512LL << 20;
  std::int64_t output_bytes = 1LL << 20;
  RelayOptions relay;
  // Described when the tool has a SessionService.
  SessionToolOptions sessions;
  // With more than one, the tool takes `pool` (one of these names; the default pool when
  // omitted) and its description says what each pool adds.
  std::vector<PoolChoice> pools;
  // The in-flight byte budget each answer is reserved in before it is built (memory.inflight_
  // bytes); a run whose answer does not fit in time gets a result with isError and verdict
  // internal whose detail names memory.inflight_bytes. No budget: answers are not counted.
  exec::AnswerBudget answers;
};

class RunPythonTool final : public Tool {
 public:
  RunPythonTool(exec::ExecutionService& service, RunPythonOptions options);
  // `sessions` may be null: the server has no sessions.
  RunPythonTool(exec::ExecutionService& service, exec::SessionService* sessions,
                RunPythonOptions options);
  std::string name() const override { return "run_python"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;
  // A run may become a task (2026-07-28 with the tasks extension); bad arguments are refused
  // before one is created.
  TaskSupport task_support() const override { return TaskSupport::kOptional; }
  Result<std::optional<nlohmann::json>> Prepare(const nlohmann::json& arguments,
                                                ToolContext& context) override;

 private:
  exec::ExecutionService& service_;
  exec::SessionService* const sessions_;
  const RunPythonOptions options_;
};

}  // namespace sandbox::mcp
