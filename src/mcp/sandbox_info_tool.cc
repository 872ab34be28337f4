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
  // The default pool's distributions by name, to say what other pools' images add.
  json defaults = json::object();
  if (auto packages = info.find("packages"); packages != info.end() && packages->is_array()) {
    for (const auto& entry : *packages) {
      if (entry.is_object() && entry.contains("name") && entry["name"].is_string()) {
        defaults[entry["name"].get<std::string>()] = entry.value("version", std::string(""));
      }
    }
  }
  if (info.contains("pools") && info["pools"].is_array()) {
    for (const auto& pool : info["pools"]) {
      out += "Pool " + pool.value("name", std::string("?")) + " (" +
             pool.value("mode", std::string("?")) + ", " + pool.value("image", std::string("?")) +
             ")";
      if (auto network = pool.find("network");
          network != pool.end() && network->is_string() && *network != "none") {
        out += ", network " + network->get<std::string>();
      }
      if (pool.contains("limits")) out += ": limits " + pool["limits"].dump();
      if (pool.contains("max_limits")) out += ", request maxima " + pool["max_limits"].dump();
      // A pool whose image adds packages to the sandbox image says which.
      if (auto extra = pool.find("extra_packages"); extra != pool.end() && extra->is_object()) {
        std::string added;
        for (const char* kind : {"debian", "pip"}) {
          auto list = extra->find(kind);
          if (list == extra->end() || !list->is_array()) continue;
          for (const auto& name : *list) {
            if (!name.is_string()) continue;
            added += (added.empty() ? "" : ", ") + name.get<std::string>() + " (" + kind + ")";
          }
        }
        if (!added.empty()) out += "; extra packages: " + added;
      }
      // The distributions its image has beyond the default pool's (an image of its own).
      if (auto installed = pool.find("packages");
          installed != pool.end() && installed->is_array() && defaults.is_object()) {
        std::string beyond;
        for (const auto& entry : *installed) {
          if (!entry.is_object()) continue;
          const std::string name = entry.value("name", std::string("?"));
          const std::string version = entry.value("version", std::string(""));
          if (defaults.value(name, std::string("\x01")) == version) continue;
          beyond += (beyond.empty() ? "" : ", ") + name + " " + version;
        }
        if (!beyond.empty()) out += "; installed beyond the default pool: " + beyond;
      }
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
