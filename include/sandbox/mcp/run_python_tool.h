// The run_python tool: runs code through the ExecutionService, relays its live output as
// notifications, and returns the result formatted by FormatRunResult.
// Arguments: code (string, required), timeout_s (number > 0, optional; the engine refuses values
// above the pool's maximum), files ([{path, content_base64}], optional), session_id (reserved:
// refused with a clear message until sessions exist). Unknown arguments are refused.
// Thread-safety: Call() may run on many threads at once.
#pragma once

#include <cstdint>
#include <string>

#include "sandbox/exec/execution_service.h"
#include "sandbox/mcp/output_relay.h"
#include "sandbox/mcp/tool.h"

namespace sandbox::mcp {

// Figures shown in the tool description, so a model knows its limits up front.
struct RunPythonOptions {
  double default_timeout_s = 30;
  double max_timeout_s = 300;
  std::int64_t memory_bytes = 512LL << 20;
  std::int64_t output_bytes = 1LL << 20;
  RelayOptions relay;
};

class RunPythonTool final : public Tool {
 public:
  RunPythonTool(exec::ExecutionService& service, RunPythonOptions options);
  std::string name() const override { return "run_python"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::ExecutionService& service_;
  const RunPythonOptions options_;
};

}  // namespace sandbox::mcp
