#include "sandbox/runner/sandbox_spec.h"

#include <algorithm>
#include <string>

namespace sandbox::runner {

std::string BootstrapCode() {
  // Kept on one line: it is a -c argument. The harness must keep reading frames from the
  // same buffered object, which may already hold bytes past the source.
  return "import sys;b=sys.stdin.buffer;n=int(b.readline());"
         "exec(compile(b.read(n),'<harness>','exec'))";
}

std::int64_t ContainerPidsLimit(const config::PoolConfig& pool) {
  return std::max<std::int64_t>(pool.limits.pids + 8, pool.runtime == "runsc" ? 256 : 0);
}

std::int64_t ContainerMemoryBytes(const config::PoolConfig& pool) {
  return pool.zygote_memory_bytes + pool.limits.memory_bytes;
}

engine::SandboxSpec BuildSandboxSpec(const SandboxSpecInput& input) {
  const config::PoolConfig& pool = *input.pool;
  engine::SandboxSpec spec;
  spec.image = pool.image;
  spec.cmd = {pool.python, "-I", "-u", "-c", BootstrapCode()};
  spec.user = std::string(kSandboxUser);
  spec.working_dir = "/tmp";
  // The harness sees EOF (and exits) when the server detaches. A session container meant to
  // outlive its server keeps stdin open instead; its harness's watchdog ends it.
  spec.keep_stdin_open = input.keep_stdin_open;
  spec.labels = input.extra_labels;
  spec.labels[std::string(kManagedLabel)] = "true";
  spec.labels[std::string(kInstanceLabel)] = input.instance_id;
  spec.labels[std::string(kPoolLabel)] = pool.name;
  spec.labels[std::string(kModeLabel)] =
      input.session ? std::string("session") : std::string(config::PoolModeName(pool.mode));
  spec.seccomp_profile_json = input.container_seccomp_json;
  // The kernel-enforced ceiling: the zygote plus the pool's run budget (a request may narrow a
  // run's memory below it, not raise it).
  spec.memory_bytes = ContainerMemoryBytes(pool);
  spec.cpus = pool.limits.cpus;
  // The zygote, the init process and a run's intermediate process share the container's pids.
  spec.pids_limit = ContainerPidsLimit(pool);
  spec.shm_bytes = 64LL << 20;
  spec.tmpfs = {{"/tmp", pool.max_limits.tmpfs_bytes, 01777}};
  // Hard ceilings; the harness lowers them per run to the request's limits.
  spec.ulimits = {
      {"nproc", pool.max_limits.nproc, pool.max_limits.nproc},
      {"nofile", pool.max_limits.nofile, pool.max_limits.nofile},
      {"fsize", pool.max_limits.fsize_bytes, pool.max_limits.fsize_bytes},
      {"core", 0, 0},
  };
  spec.runtime = pool.runtime;
  spec.network = input.network;
  return spec;
}

}  // namespace sandbox::runner
