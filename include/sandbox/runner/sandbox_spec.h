// Turns a pool's configuration into the engine-neutral spec every sandbox is launched from
// (engine::SandboxSpec): the image, the bootstrap command, a non-root user, the labels, the
// project's seccomp profile, memory, CPU, pids, /tmp and ulimits. What every sandbox gets
// regardless (network none, read-only root, all capabilities dropped, no-new-privileges, an
// init process, private IPC, no mounts of the host, so never the Docker socket) is each
// engine's to apply, in one place (docker::ToContainerSpec).
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "sandbox/config/config.h"
#include "sandbox/engine/container_engine.h"

namespace sandbox::runner {

// Labels every container of this project carries; tests and crash recovery select on them.
inline constexpr std::string_view kManagedLabel = "io.sandbox-mcp.managed";
inline constexpr std::string_view kInstanceLabel = "io.sandbox-mcp.instance";
inline constexpr std::string_view kPoolLabel = "io.sandbox-mcp.pool";
inline constexpr std::string_view kModeLabel = "io.sandbox-mcp.mode";

// The uid:gid code runs as. Numeric, so it works in images that do not name the user
// (the Snekbox image among them).
inline constexpr std::string_view kSandboxUser = "10001:10001";

// The first command of every sandbox: reads "<length>\n<harness source>" from stdin and
// executes it; the harness then speaks frames on the same stdin/stdout.
std::string BootstrapCode();

struct SandboxSpecInput {
  const config::PoolConfig* pool = nullptr;
  std::string container_seccomp_json;  // the validated profile's JSON text
  std::string instance_id;
  std::map<std::string, std::string> extra_labels;  // e.g. a session id
  bool session = false;  // labelled mode=session instead of the pool's mode
  // A session container that may outlive its server: stdin stays open when the server's
  // stream closes; its harness's watchdog bounds it instead.
  bool keep_stdin_open = false;
  // A pool with a network policy: its egress network (EgressLink::Join); default none.
  engine::SandboxNetwork network;
};

engine::SandboxSpec BuildSandboxSpec(const SandboxSpecInput& input);

// The container's memory limit: the pool's run budget plus the zygote's share.
std::int64_t ContainerMemoryBytes(const config::PoolConfig& pool);
// The container's pids limit at creation: the run's pids plus the harness's own tasks.
std::int64_t ContainerPidsLimit(const config::PoolConfig& pool);

}  // namespace sandbox::runner
