// Typed results of Engine API calls and the pure functions that parse them from the engine's
// JSON. Each keeps the subset this project uses plus the raw JSON for anything else.
// Thread-safety: value types and pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandbox/core/result.h"

namespace sandbox::docker {

struct PingInfo {
  std::string api_version;  // the engine's maximum, from the Api-Version header
  std::string os_type;      // Ostype header, "linux"
};

struct VersionInfo {
  std::string version;          // "20.10.24+dfsg1"
  std::string api_version;      // engine maximum
  std::string min_api_version;  // engine minimum
  std::string os;
  std::string arch;
  std::string kernel_version;
  nlohmann::json raw;
};

struct SystemInfo {
  std::string id;
  std::string name;
  std::string server_version;
  std::string operating_system;
  std::string cgroup_version;  // "1" or "2"
  std::string default_runtime;
  std::vector<std::string> runtimes;  // names, e.g. {"runc", "runsc"}
  std::int64_t ncpu = 0;
  std::int64_t mem_total = 0;
  nlohmann::json raw;
};

struct ImageInfo {
  std::string id;
  std::vector<std::string> repo_tags;
  std::int64_t size = 0;
  std::string user;  // Config.User
  std::vector<std::string> env;
  std::vector<std::string> cmd;
  std::vector<std::string> entrypoint;
  std::map<std::string, std::string> labels;
  nlohmann::json raw;
};

struct CreatedContainer {
  std::string id;
  std::vector<std::string> warnings;
};

struct ContainerState {
  std::string status;  // "created", "running", "exited", ...
  bool running = false;
  bool oom_killed = false;  // unreliable on some engines: watch the `oom` event too
  std::int64_t exit_code = 0;
  std::int64_t pid = 0;
  std::string started_at;
  std::string finished_at;
  std::string error;
};

struct ContainerInfo {
  std::string id;
  std::string name;          // without the leading '/'
  std::string image;         // the image's id (sha256:...)
  std::string config_image;  // the reference the container was created from
  ContainerState state;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> ip_addresses;  // IPv4 by network name (NetworkSettings)
  nlohmann::json raw;
};

struct NetworkSummary {
  std::string id;
  std::string name;
  std::map<std::string, std::string> labels;
  int containers = 0;  // attached now (the inspect answer's Containers)
};

struct ContainerSummary {
  std::string id;
  std::vector<std::string> names;
  std::string image;
  std::string state;         // "running", "exited", ...
  std::string status;        // "Up 2 seconds"
  std::int64_t created = 0;  // unix seconds
  std::map<std::string, std::string> labels;
};

struct WaitResult {
  std::int64_t exit_code = 0;
  std::string error;  // the engine's Error.Message, empty when none
};

// Parsers: kProtocol when the JSON lacks the shape the call guarantees.
Result<VersionInfo> ParseVersion(const nlohmann::json& j);
Result<SystemInfo> ParseInfo(const nlohmann::json& j);
Result<ImageInfo> ParseImageInspect(const nlohmann::json& j);
Result<CreatedContainer> ParseCreated(const nlohmann::json& j);
Result<ContainerInfo> ParseContainerInspect(const nlohmann::json& j);
Result<std::vector<ContainerSummary>> ParseContainerList(const nlohmann::json& j);
Result<WaitResult> ParseWait(const nlohmann::json& j);
Result<NetworkSummary> ParseNetwork(const nlohmann::json& j);
Result<std::vector<NetworkSummary>> ParseNetworkList(const nlohmann::json& j);

}  // namespace sandbox::docker
