// What the process reads before it builds anything: its command line, the configuration, the
// logger, and where a policy file is.
#pragma once

#include <spdlog/logger.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/core/error.h"
#include "sandbox/core/result.h"

namespace sandbox::server {

struct Invocation {
  std::vector<char*> args;  // argv, kept for Reload()
  config::Config config;    // from the defaults, the file, flags and environment
  // The configuration read again from the same command line, file and environment (SIGHUP).
  Result<config::Config> Reload() const;
};

// Reads argv and the environment into `out`. Returns the exit code when the process is done
// already: 0 after --help or --version (printed on stdout), 2 for a bad command line (said on
// stderr); nullopt when the server should start. The configuration is not validated yet.
std::optional<int> ParseInvocation(int argc, char** argv, Invocation& out);

// The server's logger, on stderr (with --stdio, stdout carries the protocol), in the
// configured level and format.
std::shared_ptr<spdlog::logger> MakeLogger(const config::Config& config);

// A relative policy path is looked up in the working directory first, then in the source
// tree the binary was built from (so the server runs from any directory of a checkout).
std::filesystem::path ResolvePolicy(const std::string& configured);

// Logs `error` as critical and returns the exit code of a failed start (1).
int Fail(const std::shared_ptr<spdlog::logger>& logger, const Error& error);

}  // namespace sandbox::server
