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

docker::ContainerSpec BuildSandboxSpec(const SandboxSpecInput& input) {
  const config::PoolConfig& pool = *input.pool;
  docker::ContainerSpec spec;
  spec.image = pool.image;
  spec.cmd = {pool.python, "-I", "-u", "-c", BootstrapCode()};
  spec.entrypoint = std::vector<std::string>{};  // the image's entrypoint never runs
  spec.user = std::string(kSandboxUser);
  spec.working_dir = "/tmp";
  spec.open_stdin = true;
  spec.attach_stdin = true;
  spec.attach_stdout = true;
  spec.attach_stderr = true;
  // The harness sees EOF (and exits) when the server detaches. A session container meant to
  // outlive its server keeps stdin open instead, so a later server can attach again (the
  // engine lets a new attach write to the same stdin); its harness's watchdog ends it.
  spec.stdin_once = !input.keep_stdin_open;
  spec.network_disabled = true;
  spec.labels = input.extra_labels;
  spec.labels[std::string(kManagedLabel)] = "true";
  spec.labels[std::string(kInstanceLabel)] = input.instance_id;
  spec.labels[std::string(kPoolLabel)] = pool.name;
  spec.labels[std::string(kModeLabel)] =
      input.session ? std::string("session") : std::string(config::PoolModeName(pool.mode));

  auto& hc = spec.host_config;
  hc.network_mode = "none";
  hc.readonly_rootfs = true;
  hc.cap_drop = {"ALL"};
  hc.security_opt = {"no-new-privileges:true", "seccomp=" + input.container_seccomp_json};
  hc.init = true;
  hc.ipc_mode = "private";
  // The kernel-enforced ceiling: the zygote plus the pool's run budget (a request may narrow a
  // run's memory below it, not raise it). Swap equal to memory means none.
  hc.memory = ContainerMemoryBytes(pool);
  hc.memory_swap = hc.memory;
  hc.nano_cpus = static_cast<std::int64_t>(pool.limits.cpus * 1e9);
  // The zygote, the init process and a run's intermediate process share the container's pids.
  hc.pids_limit = ContainerPidsLimit(pool);
  hc.shm_size = 64LL << 20;
  const auto tmpfs_size = std::to_string(pool.max_limits.tmpfs_bytes);
  hc.tmpfs["/tmp"] = "rw,nosuid,nodev,size=" + tmpfs_size + ",mode=1777";
  // Hard ceilings; the harness lowers them per run to the request's limits.
  hc.ulimits = {
      {"nproc", pool.max_limits.nproc, pool.max_limits.nproc},
      {"nofile", pool.max_limits.nofile, pool.max_limits.nofile},
      {"fsize", pool.max_limits.fsize_bytes, pool.max_limits.fsize_bytes},
      {"core", 0, 0},
  };
  if (!pool.runtime.empty()) hc.runtime = pool.runtime;
  // If the server dies, the attach connection closes, the harness sees end of input and exits,
  // and the engine removes the container by itself: no leftovers even before crash recovery.
  spec.extra = {{"HostConfig", {{"AutoRemove", true}}}};
  return spec;
}

}  // namespace sandbox::runner
