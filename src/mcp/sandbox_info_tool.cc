#include "sandbox/mcp/sandbox_info_tool.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

std::string Summary(const json& info) {
  std::string out;
  if (info.contains("python")) {
    const json& py = info["python"];
    out += "Python " + (py.is_string() ? py.get<std::string>() : py.dump()) + "\n";
  }
  out += "Network: " + info.value("network", std::string("none")) + "\n";
  if (info.contains("pools") && info["pools"].is_array()) {
    for (const auto& pool : info["pools"]) {
      out += "Pool " + pool.value("name", std::string("?")) + " (" +
             pool.value("mode", std::string("?")) + ", " + pool.value("image", std::string("?")) +
             ")";
      if (pool.contains("limits")) out += ": limits " + pool["limits"].dump();
      if (pool.contains("max_limits")) out += ", request maxima " + pool["max_limits"].dump();
      out += "\n";
    }
  }
  if (info.contains("packages")) {
    out += "Packages: ";
    const json& packages = info["packages"];
    bool first = true;
    if (packages.is_object()) {
      for (const auto& [name, version] : packages.items()) {
        out += (first ? "" : ", ") + name + " " +
               (version.is_string() ? version.get<std::string>() : version.dump());
        first = false;
      }
    } else if (packages.is_array()) {
      for (const auto& entry : packages) {
        if (entry.is_object()) {
          out += (first ? "" : ", ") + entry.value("name", std::string("?")) + " " +
                 entry.value("version", std::string(""));
        } else {
          out +=
              (first ? "" : ", ") + (entry.is_string() ? entry.get<std::string>() : entry.dump());
        }
        first = false;
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace

json SandboxInfoTool::Definition() const {
  return {{"name", name()},
          {"title", "Sandbox info"},
          {"description",
           "Describe the Python sandbox: the Python version, the installed packages with their "
           "versions, the resource limits in force (default and maximum timeout, memory, output) "
           "and the warm container pools. Takes no arguments."},
          {"inputSchema",
           {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}}},
          {"annotations",
           {{"title", "Sandbox info"}, {"readOnlyHint", true}, {"openWorldHint", false}}}};
}

Result<json> SandboxInfoTool::Call(const json& arguments, ToolContext& /*context*/) {
  if (!arguments.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 arguments.begin().key() + ": unknown argument (sandbox_info takes none)");
  }
  auto info = service_.Info();
  if (!info.ok()) {
    return json{{"content",
                 {{{"type", "text"}, {"text", "sandbox_info failed: " + info.error().ToString()}}}},
                {"isError", true}};
  }
  json result = {{"content",
                  {{{"type", "text"}, {"text", Summary(info->info)}},
                   {{"type", "text"}, {"text", info->info.dump(1)}}}},
                 {"structuredContent", info->info}};
  return result;
}

}  // namespace sandbox::mcp
