#include "sandbox/core/machine_memory.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

namespace sandbox {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::int64_t ParseNumber(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end != text.data() && value > 0 ? value : 0;
}

}  // namespace

std::int64_t MachineMemoryBytes(const std::string& meminfo, const std::string& cgroup_limit) {
  std::int64_t total = 0;
  constexpr std::string_view kKey = "MemTotal:";
  const std::string_view text = meminfo;
  if (auto at = text.find(kKey); at != std::string_view::npos) {
    const std::int64_t kib = ParseNumber(text.substr(at + kKey.size()));
    if (kib > 0 && kib < (std::numeric_limits<std::int64_t>::max() >> 10)) total = kib << 10;
  }
  // cgroup v1 says "no limit" with a huge number (PAGE_COUNTER_MAX pages); any limit above
  // the RAM is no limit either way, so min() covers both.
  const std::int64_t limit = ParseNumber(cgroup_limit);
  if (limit > 0 && (total == 0 || limit < total)) return limit;
  return total;
}

std::int64_t MachineMemoryBytes() {
  std::string limit = ReadFile("/sys/fs/cgroup/memory.max");
  if (limit.empty()) limit = ReadFile("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return MachineMemoryBytes(ReadFile("/proc/meminfo"), limit);
}

}  // namespace sandbox
