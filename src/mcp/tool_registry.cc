#include "sandbox/mcp/tool_registry.h"

#include <cstdlib>

namespace sandbox::mcp {

void ToolRegistry::Add(std::unique_ptr<Tool> tool) {
  if (Find(tool->name()) != nullptr) std::abort();
  tools_.push_back(std::move(tool));
}

Tool* ToolRegistry::Find(std::string_view name) const {
  for (const auto& tool : tools_) {
    if (tool->name() == name) return tool.get();
  }
  return nullptr;
}

nlohmann::json ToolRegistry::List() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& tool : tools_) list.push_back(tool->Definition());
  return list;
}

}  // namespace sandbox::mcp
