// The server process's own figures, read from /proc/self at scrape time (the standard
// process_* metrics of Prometheus clients).
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sandbox::metrics {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  std::int64_t resident_bytes = 0;
  std::int64_t virtual_bytes = 0;
  std::int64_t threads = 0;
  std::int64_t open_fds = 0;
  std::int64_t max_fds = 0;       // the soft RLIMIT_NOFILE
  double start_time_seconds = 0;  // since the Unix epoch
};

// nullopt when /proc is unreadable.
std::optional<ProcessStats> ReadProcessStats();

// What the C library's allocator holds (glibc's mallinfo2): tells a leak (in_use grows) from
// memory freed but kept by the allocator (free grows, RSS with it) when RSS does not come back.
struct HeapStats {
  std::int64_t in_use_bytes = 0;   // allocated and not freed: arena chunks and mmapped chunks
  std::int64_t free_bytes = 0;     // freed, kept in the arenas for reuse (resident or not)
  std::int64_t arena_bytes = 0;    // the arenas' memory from the kernel (sbrk heap + mmapped heaps)
  std::int64_t mmapped_bytes = 0;  // chunks of their own mapping (large ones), part of in_use
};

// nullopt without glibc, or under a sanitizer (its allocator is not glibc's).
std::optional<HeapStats> ReadHeapStats();

// The parsers behind it, for tests: the fields of /proc/<pid>/stat after the command name,
// and the btime line of /proc/stat.
struct StatFields {
  std::int64_t utime_ticks = 0;
  std::int64_t stime_ticks = 0;
  std::int64_t threads = 0;
  std::int64_t start_ticks = 0;
  std::int64_t vsize_bytes = 0;
  std::int64_t rss_pages = 0;
};
std::optional<StatFields> ParseStat(std::string_view text);
std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat);

}  // namespace sandbox::metrics
