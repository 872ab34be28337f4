#include "startup.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <map>

#include "sandbox/logging/json_formatter.h"
#include "sandbox/logging/text_formatter.h"

#ifndef SANDBOX_SOURCE_POLICY_DIR
#define SANDBOX_SOURCE_POLICY_DIR "policies"
#endif

extern "C" char** environ;

namespace sandbox::server {
namespace {

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

}  // namespace

Result<config::Config> Invocation::Reload() const {
  auto again = config::ParseCommandLine(static_cast<int>(args.size()), args.data(), Environment());
  if (!again.ok()) return again.error();
  return std::move(again->config);
}

std::optional<int> ParseInvocation(int argc, char** argv, Invocation& out) {
  out.args.assign(argv, argv + argc);
  auto parsed =
      config::ParseCommandLine(static_cast<int>(out.args.size()), out.args.data(), Environment());
  if (!parsed.ok()) {
    std::cerr << "sandbox-mcp: " << parsed.error().message() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << config::UsageText();
    return 0;
  }
  if (parsed->version) {
    std::cout << "sandbox-mcp " << SANDBOX_VERSION << "\n";
    return 0;
  }
  out.config = std::move(parsed->config);
  return std::nullopt;
}

std::shared_ptr<spdlog::logger> MakeLogger(const config::Config& config) {
  auto logger = spdlog::stderr_color_mt("sandbox-mcp");
  logger->set_level(spdlog::level::from_str(config.log_level));
  if (config.log_format == "json") {
    logger->set_formatter(std::make_unique<logging::JsonFormatter>());
  } else {
    logger->set_formatter(logging::MakeTextFormatter());
  }
  return logger;
}

std::filesystem::path ResolvePolicy(const std::string& configured) {
  std::filesystem::path path(configured);
  if (path.is_absolute() || std::filesystem::exists(path)) return path;
  std::filesystem::path fallback =
      std::filesystem::path(SANDBOX_SOURCE_POLICY_DIR).parent_path() / path;
  return std::filesystem::exists(fallback) ? fallback : path;
}

int Fail(const std::shared_ptr<spdlog::logger>& logger, const Error& error) {
  logger->critical("{}", error.ToString());
  return 1;
}

}  // namespace sandbox::server
