#include "sandbox/config/bounds.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "object_reader.h"
#include "sandbox/config/config.h"

namespace sandbox::config {
namespace {

using detail::Invalid;

// A number in a /proc or /sys file; 0 when absent or "max".
std::int64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  std::int64_t value = 0;
  if (!(in >> value) || value < 0) return 0;
  return value;
}

// pids.max of this process's cgroup (v2: "0::/path"; v1: "N:pids:/path"); 0 when unbounded.
std::int64_t CgroupPidsMax() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      if (auto v = ReadNumber("/sys/fs/cgroup" + path + "/pids.max"); v > 0) return v;
    } else if (controllers == "pids") {
      if (auto v = ReadNumber("/sys/fs/cgroup/pids" + path + "/pids.max"); v > 0) return v;
    }
  }
  return 0;
}

Status AtMost(const std::string& path, std::int64_t value, std::int64_t bound, const char* why) {
  if (value <= bound) return OkStatus();
  return Invalid(path, std::to_string(value) + " is above its bound " + std::to_string(bound) +
                           " (" + why + ")");
}

}  // namespace

HostLimits ReadHostLimits() {
  HostLimits host;
  auto take = [&host](std::int64_t value, const char* source) {
    if (value > 0 && (host.max_tasks == 0 || value < host.max_tasks)) {
      host.max_tasks = value;
      host.source = source;
    }
  };
  rlimit nproc{};
  if (::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY) {
    take(static_cast<std::int64_t>(nproc.rlim_cur), "RLIMIT_NPROC");
  }
  take(ReadNumber("/proc/sys/kernel/threads-max"), "kernel.threads-max");
  take(ReadNumber("/proc/sys/kernel/pid_max"), "kernel.pid_max");
  take(CgroupPidsMax(), "the cgroup's pids.max");
  return host;
}

ThreadCost ThreadCostOf(const Config& config) {
  ThreadCost cost;
  const auto& s = config.server;
  if (!s.stdio) {
    cost.http = static_cast<std::int64_t>(s.http_threads) + 2LL * s.max_streams;
  }
  cost.tasks = 2LL * config.tasks.max_running;
  for (const auto& pool : config.pools) {
    cost.pools += 2 + static_cast<std::int64_t>(pool.max_concurrent_starts);
    if (config.sessions.enabled) {
      // Its session pool (service::PoolOptionsFor): starts at most max_total at once.
      cost.pools += 2 + std::min<std::int64_t>(pool.max_concurrent_starts,
                                               std::max(1, config.sessions.max_total));
    }
  }
  return cost;
}

std::int64_t ThreadBudget(const HostLimits& host) {
  if (host.max_tasks <= 0) return kMaxServerThreads;
  return std::min(kMaxServerThreads, host.max_tasks / 2);
}

Status CheckPoolUpperBounds(const PoolConfig& pool, const std::string& path) {
  SANDBOX_RETURN_IF_ERROR(AtMost(path + ".max_total", pool.max_total, kMaxPoolTotal,
                                 "containers of one pool; each holds a connection and memory"));
  return AtMost(path + ".max_concurrent_starts", pool.max_concurrent_starts, kMaxConcurrentStarts,
                "each start in flight is a server thread; the engine gains nothing past a few");
}

Status CheckThreadBudget(const Config& config, const HostLimits& host) {
  const ThreadCost cost = ThreadCostOf(config);
  const std::int64_t budget = ThreadBudget(host);
  if (cost.total() <= budget) return OkStatus();
  std::ostringstream why;
  why << "the server would run up to " << cost.total() << " threads (" << cost.base
      << " of its own, " << cost.http << " for http_threads and 2 per server.max_streams, "
      << cost.tasks << " for 2 per tasks.max_running, " << cost.pools
      << " for the pools' reapers, maintenance and max_concurrent_starts), above its thread "
         "budget "
      << budget;
  if (host.max_tasks > 0 && host.max_tasks / 2 < kMaxServerThreads) {
    why << " (half of this host's task limit " << host.max_tasks << ", " << host.source << ")";
  } else {
    why << " (the fixed ceiling)";
  }
  why << "; lower one of them";
  return Invalid("threads", why.str());
}

Status CheckUpperBounds(const Config& config, const HostLimits& host) {
  const auto& s = config.server;
  SANDBOX_RETURN_IF_ERROR(AtMost("server.http_threads", s.http_threads, kMaxHttpThreads,
                                 "each is a thread started at once"));
  SANDBOX_RETURN_IF_ERROR(AtMost("server.max_streams", s.max_streams, kMaxStreams,
                                 "each slot costs up to two threads"));
  SANDBOX_RETURN_IF_ERROR(AtMost("server.max_connections", s.max_connections, kMaxConnections,
                                 "each costs up to three descriptors"));
  SANDBOX_RETURN_IF_ERROR(AtMost("server.max_mcp_sessions", s.max_mcp_sessions, kMaxMcpSessions,
                                 "each is kept in memory until it idles out"));
  SANDBOX_RETURN_IF_ERROR(AtMost("sessions.max_total", config.sessions.max_total, kMaxSessions,
                                 "each holds a container and a connection"));
  SANDBOX_RETURN_IF_ERROR(AtMost("sessions.max_per_principal", config.sessions.max_per_principal,
                                 kMaxSessions, "each holds a container and a connection"));
  SANDBOX_RETURN_IF_ERROR(AtMost("tasks.max_running", config.tasks.max_running, kMaxTasksRunning,
                                 "each runs on up to two threads"));
  SANDBOX_RETURN_IF_ERROR(AtMost("tasks.max_per_principal", config.tasks.max_per_principal,
                                 kMaxTasksPerPrincipal, "each keeps its result"));
  SANDBOX_RETURN_IF_ERROR(AtMost("pools", static_cast<std::int64_t>(config.pools.size()), kMaxPools,
                                 "pools configured; each runs its own threads"));
  for (std::size_t i = 0; i < config.pools.size(); ++i) {
    SANDBOX_RETURN_IF_ERROR(
        CheckPoolUpperBounds(config.pools[i], "pools[" + std::to_string(i) + "]"));
  }
  return CheckThreadBudget(config, host);
}

}  // namespace sandbox::config
