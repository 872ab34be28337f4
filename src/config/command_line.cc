// The command line: flags, the --config file and the environment, applied over the defaults.
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "sandbox/config/config.h"
#include "sandbox/core/json.h"

namespace sandbox::config {

using nlohmann::json;

Result<CommandLine> ParseCommandLine(int argc, const char* const* argv,
                                     const std::map<std::string, std::string>& env) {
  CommandLine out;
  std::optional<std::string> listen;
  std::optional<std::string> config_file;
  std::optional<std::string> log_level;
  std::optional<std::string> log_format;
  std::optional<std::string> instance_id;
  auto usage = [](const std::string& what) {
    return Error(ErrorCode::kInvalidArgument, what + " (see --help)");
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> Result<std::string> {
      if (i + 1 >= argc) return usage(std::string(flag) + " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--help" || arg == "-h") {
      out.help = true;
    } else if (arg == "--version") {
      out.version = true;
    } else if (arg == "--stdio") {
      out.config.server.stdio = true;
    } else if (arg == "--listen") {
      auto v = value("--listen");
      if (!v.ok()) return v.error();
      listen = *v;
    } else if (arg == "--config") {
      auto v = value("--config");
      if (!v.ok()) return v.error();
      config_file = *v;
    } else if (arg == "--log-level") {
      auto v = value("--log-level");
      if (!v.ok()) return v.error();
      log_level = *v;
    } else if (arg == "--log-format") {
      auto v = value("--log-format");
      if (!v.ok()) return v.error();
      log_format = *v;
    } else if (arg == "--instance-id") {
      auto v = value("--instance-id");
      if (!v.ok()) return v.error();
      instance_id = *v;
    } else {
      return usage("unknown argument \"" + arg + "\"");
    }
  }
  if (config_file) {
    std::ifstream in(*config_file);
    if (!in) {
      return Error(ErrorCode::kInvalidArgument, "cannot read configuration file " + *config_file);
    }
    std::stringstream text;
    text << in.rdbuf();
    auto doc = ParseJson(text.str(), {.max_depth = kMaxJsonDepth, .allow_comments = true});
    if (!doc.ok()) {
      return Error(ErrorCode::kInvalidArgument,
                   "configuration file " + *config_file + ": " + doc.error().message());
    }
    auto applied = ApplyJson(std::move(out.config), *doc);
    if (!applied.ok()) return applied.error().WithContext(*config_file);
    out.config = std::move(*applied);
  }
  // The command line and the environment override the file.
  if (listen) {
    auto applied = ApplyJson(std::move(out.config), json{{"server", {{"listen", *listen}}}});
    if (!applied.ok()) return applied.error();
    out.config = std::move(*applied);
  }
  if (log_level) out.config.log_level = *log_level;
  if (log_format) out.config.log_format = *log_format;
  if (instance_id) out.config.instance_id = *instance_id;
  if (auto it = env.find("SANDBOX_MCP_TOKEN"); it != env.end() && !it->second.empty()) {
    out.config.server.token = it->second;
  }
  return out;
}

std::string UsageText() {
  return R"(usage: sandbox-mcp [--listen HOST:PORT] [--stdio] [--config FILE] [--log-level LEVEL]
                   [--log-format text|json] [--instance-id ID]

Runs untrusted Python for MCP clients in locked-down, pre-warmed Docker containers.

  --listen HOST:PORT  HTTP address (default 127.0.0.1:8080); beyond loopback a token is required
  --stdio             speak MCP over stdin/stdout instead of HTTP
  --config FILE       JSON configuration (see docs/configuration.md)
  --log-level LEVEL   trace, debug, info (default), warn, error, off
  --log-format FORMAT text (default) or json: one JSON object per log line
  --instance-id ID    label of this server's containers (default "default"); a server
                      starting removes the containers of its instance id whose owning
                      server process is gone, never those of a live server
  --version           print the version and exit

Environment: SANDBOX_MCP_TOKEN  bearer token clients must send (Authorization: Bearer ...)
)";
}

}  // namespace sandbox::config
