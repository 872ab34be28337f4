// Upper bounds of the configuration values that cost the server threads, containers or
// descriptors: the one owner of those bounds. Validate() applies them to the configuration file
// (at start-up and on SIGHUP), and the admin API's PoolTuner to its live changes, through the
// same functions, so a value refused in one place is refused in all.
//
// Two kinds of bound (docs/memory-budget.md, "Threads and upper bounds of configuration values",
// has the table and the reasons):
// - a fixed ceiling per value (kMax... below), far above any useful setting;
// - the thread budget: the threads the configuration can make the server run (ThreadCost) must
//   fit half of the tasks the host lets this process have (HostLimits), so a configuration
//   cannot take the server, or the host, to its pid limit.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <string>

#include "sandbox/core/result.h"

namespace sandbox::config {

struct Config;
struct PoolConfig;

// What the host lets this process run, read once in main (ReadHostLimits) and passed down.
struct HostLimits {
  // Tasks (processes and threads) this process can have: the smallest of RLIMIT_NPROC (soft),
  // /proc/sys/kernel/threads-max, /proc/sys/kernel/pid_max and its cgroup's pids.max.
  // 0: not known, and then the fixed ceilings and kMaxServerThreads bound alone.
  std::int64_t max_tasks = 0;
  std::string source;  // which of them set max_tasks, for refusals ("pid_max", ...)
};

HostLimits ReadHostLimits();

// Fixed ceilings. Each is far above what the value is useful at and low enough that the value
// alone cannot exhaust the host; the thread budget bounds their sum.
inline constexpr int kMaxHttpThreads = 1024;         // server.http_threads: started at once
inline constexpr int kMaxStreams = 4096;             // server.max_streams: up to 2 threads each
inline constexpr int kMaxConnections = 100000;       // server.max_connections: 3 descriptors each
inline constexpr int kMaxMcpSessions = 1000000;      // server.max_mcp_sessions: memory only
inline constexpr int kMaxPools = 32;                 // pools: (2 + starts) threads, twice each
inline constexpr int kMaxPoolTotal = 1024;           // pools[].max_total: containers
inline constexpr int kMaxConcurrentStarts = 64;      // pools[].max_concurrent_starts: a thread each
inline constexpr int kMaxSessions = 1024;            // sessions.max_total: containers
inline constexpr int kMaxTasksRunning = 1024;        // tasks.max_running: 2 threads each
inline constexpr int kMaxTasksPerPrincipal = 10000;  // tasks.max_per_principal: kept results
// The most threads any configuration may cost, whatever the host allows: each reserves a stack
// (8 MiB of address space, some KiB resident) and a kernel task.
inline constexpr std::int64_t kMaxServerThreads = 16384;
// Threads the server runs whatever its configuration (main, signals, the connection guard,
// httplib's acceptor, the session expiry, the Docker events reader, the memory trimmer,
// libcurl's resolver...), with room to spare.
inline constexpr std::int64_t kBaseThreads = 32;

// The threads `config` can make the server run at most, by where they come from.
struct ThreadCost {
  std::int64_t base = kBaseThreads;
  std::int64_t http = 0;   // http_threads, plus a worker and a run thread per stream slot
  std::int64_t tasks = 0;  // a task's thread and its output relay, per tasks.max_running
  std::int64_t pools = 0;  // per pool: reaper, maintenance, one per concurrent start; again
                           // for its session pool while sessions are on
  std::int64_t total() const { return base + http + tasks + pools; }
};
ThreadCost ThreadCostOf(const Config& config);

// The most threads the configuration may cost on this host: half of its task limit (the other
// half is left to whatever else runs as this user), at most kMaxServerThreads.
std::int64_t ThreadBudget(const HostLimits& host);

// Every fixed ceiling of `config` (lower bounds are Validate()'s), then its thread cost against
// the budget. A refusal names the key, its value and the bound: "configuration
// pools[0].max_concurrent_starts: 1500 is above its bound 64 (...)".
Status CheckUpperBounds(const Config& config, const HostLimits& host);
// The ceilings of one pool's sizes; `path` names the pool ("pools[0]").
Status CheckPoolUpperBounds(const PoolConfig& pool, const std::string& path);
// The thread budget alone.
Status CheckThreadBudget(const Config& config, const HostLimits& host);

}  // namespace sandbox::config
