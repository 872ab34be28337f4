#include "process_stats.h"

#include <dirent.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// A sanitizer brings an allocator of its own: glibc's figures would not describe the heap.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANDBOX_OWN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SANDBOX_OWN_ALLOCATOR 1
#endif
#endif

namespace sandbox::metrics {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ToInt(std::string_view text, std::int64_t& out) {
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

std::int64_t CountOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  std::int64_t n = 0;
  // readdir is safe here: the stream is this call's own.
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe)
    if (entry->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n > 0 ? n - 1 : 0;  // the directory stream's own descriptor
}

}  // namespace

std::optional<StatFields> ParseStat(std::string_view text) {
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so fields count from the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> fields;  // fields[0] is field 3 (state)
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty()) {
    const auto start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const auto end = std::min(rest.find_first_of(" \n"), rest.size());
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  // Field numbers of proc(5): utime 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24.
  auto at = [&fields](std::size_t field) { return fields[field - 3]; };
  if (fields.size() < 24 - 2) return std::nullopt;
  StatFields out;
  if (!ToInt(at(14), out.utime_ticks) || !ToInt(at(15), out.stime_ticks) ||
      !ToInt(at(20), out.threads) || !ToInt(at(22), out.start_ticks) ||
      !ToInt(at(23), out.vsize_bytes) || !ToInt(at(24), out.rss_pages)) {
    return std::nullopt;
  }
  return out;
}

std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat) {
  std::size_t pos = 0;
  while (pos < proc_stat.size()) {
    auto end = std::min(proc_stat.find('\n', pos), proc_stat.size());
    std::string_view line = proc_stat.substr(pos, end - pos);
    pos = end + 1;
    if (line.starts_with("btime ")) {
      std::int64_t value = 0;
      if (ToInt(line.substr(6), value)) return value;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<ProcessStats> ReadProcessStats() {
  auto stat = ParseStat(ReadFile("/proc/self/stat"));
  if (!stat) return std::nullopt;
  const auto ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const auto page = static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
  ProcessStats out;
  out.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks;
  out.resident_bytes = stat->rss_pages * page;
  out.virtual_bytes = stat->vsize_bytes;
  out.threads = stat->threads;
  out.open_fds = CountOpenFds();
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.max_fds = static_cast<std::int64_t>(limit.rlim_cur);
  }
  if (auto boot = ParseBootTime(ReadFile("/proc/stat"))) {
    out.start_time_seconds =
        static_cast<double>(*boot) + static_cast<double>(stat->start_ticks) / ticks;
  }
  return out;
}

std::optional<HeapStats> ReadHeapStats() {
#if defined(__GLIBC__) && !defined(SANDBOX_OWN_ALLOCATOR)
  // mallinfo2 locks each arena in turn while it walks its free lists: fine at scrape time.
  const struct mallinfo2 info = ::mallinfo2();
  HeapStats out;
  out.in_use_bytes = static_cast<std::int64_t>(info.uordblks + info.hblkhd);
  out.free_bytes = static_cast<std::int64_t>(info.fordblks);
  out.arena_bytes = static_cast<std::int64_t>(info.arena);
  out.mmapped_bytes = static_cast<std::int64_t>(info.hblkhd);
  return out;
#else
  return std::nullopt;
#endif
}

}  // namespace sandbox::metrics
