// ContainerSpec: a typed description of a container to create, and the pure function that turns it
// into the JSON body of POST /containers/create. Only fields that are set are sent, so the engine's
// defaults apply to the rest.
// Thread-safety: value types and a pure function; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandbox::docker {

struct Ulimit {
  std::string name;  // "nproc", "nofile", "fsize", ...
  std::int64_t soft = 0;
  std::int64_t hard = 0;
};

struct HostConfig {
  std::optional<std::string> network_mode;  // "none", "bridge", ...
  std::optional<std::int64_t> memory;       // bytes
  std::optional<std::int64_t> memory_swap;  // bytes incl. memory; equal to memory = no swap;
                                            // unset = engine default (2x memory)
  std::optional<std::int64_t> nano_cpus;    // 1e9 = one CPU
  std::optional<std::int64_t> pids_limit;
  bool readonly_rootfs = false;
  std::map<std::string, std::string> tmpfs;  // mount point -> options ("rw,nosuid,size=16m")
  std::vector<std::string> cap_drop;
  std::vector<std::string> cap_add;
  // E.g. "no-new-privileges:true". A seccomp profile is passed as its JSON *text*:
  // "seccomp=" + profile (the CLI reads files client-side; the engine does not). See SeccompOpt.
  std::vector<std::string> security_opt;
  std::vector<Ulimit> ulimits;
  std::optional<bool> init;
  std::optional<std::string> runtime;   // "runc", "runsc"
  std::optional<std::string> ipc_mode;  // "none", "private", ...
  std::optional<int> oom_score_adj;
  std::optional<std::int64_t> shm_size;  // bytes
  std::vector<std::string> dns;          // resolver addresses
  std::vector<std::string> dns_options;  // resolv.conf options ("timeout:1")
  std::map<std::string, std::string> sysctls;
};

// The container's endpoint on its network (network_mode names it) at creation.
struct NetworkEndpoint {
  std::string network;
  std::string ipv4;  // "": the engine picks
};

struct ContainerSpec {
  std::string name;  // empty: the engine picks one
  std::string image;
  std::vector<std::string> cmd;
  std::optional<std::vector<std::string>> entrypoint;  // set (even empty) to override the image's
  std::vector<std::string> env;                        // "KEY=value"
  std::optional<std::string> user;                     // "10001" or "65534:65534"
  std::optional<std::string> working_dir;
  std::map<std::string, std::string> labels;
  bool tty = false;  // a TTY makes attach output raw (no stdout/stderr framing)
  bool open_stdin = false;
  bool attach_stdin = false;
  bool attach_stdout = false;
  bool attach_stderr = false;
  bool stdin_once = false;  // close the container's stdin when the first attached client detaches
  bool network_disabled = false;
  HostConfig host_config;
  std::optional<NetworkEndpoint> endpoint;
  // Escape hatch: merged into the body last with JSON merge-patch (RFC 7386) semantics: objects
  // merge recursively, other values replace, null deletes. E.g. {"HostConfig":{"CpusetCpus":"0"}}.
  nlohmann::json extra = nlohmann::json::object();
};

// The body of POST /containers/create for `spec` (the name goes in the query, not the body).
nlohmann::json BuildCreateBody(const ContainerSpec& spec);

// "seccomp=<profile JSON text>" for HostConfig::security_opt.
std::string SeccompOpt(const nlohmann::json& profile);

}  // namespace sandbox::docker
