// The sandbox_info tool: Python version, installed packages, limits and pools, from
// ExecutionService::Info(), as structuredContent plus a readable text block.
// Thread-safety: Call() may run on many threads at once.
#pragma once

#include <string>

#include "sandbox/exec/execution_service.h"
#include "sandbox/mcp/tool.h"

namespace sandbox::mcp {

class SandboxInfoTool final : public Tool {
 public:
  explicit SandboxInfoTool(exec::ExecutionService& service) : service_(service) {}
  std::string name() const override { return "sandbox_info"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::ExecutionService& service_;
};

}  // namespace sandbox::mcp
