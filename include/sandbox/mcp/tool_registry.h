// ToolRegistry: the server's tools by name, in registration order (the tools/list order).
// Thread-safety: filled during start-up, then read-only; reads are safe from any thread.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "sandbox/mcp/tool.h"

namespace sandbox::mcp {

class ToolRegistry {
 public:
  // A second tool with the same name replaces nothing: it is a start-up bug and aborts.
  void Add(std::unique_ptr<Tool> tool);
  Tool* Find(std::string_view name) const;
  nlohmann::json List() const;  // the tools array of a tools/list result
  std::size_t size() const { return tools_.size(); }

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
};

}  // namespace sandbox::mcp
