// How much memory this process may use on its machine: the smaller of the machine's RAM
// (/proc/meminfo MemTotal) and the memory limit of the cgroup the process runs in (v2
// memory.max or v1 memory.limit_in_bytes), so a server in a container sizes its defaults to
// the container, not to the host.
#pragma once

#include <cstdint>
#include <string>

namespace sandbox {

// 0 when nothing could be read.
std::int64_t MachineMemoryBytes();

// The parsing behind it, for tests: `meminfo` is /proc/meminfo's text, `cgroup_limit` the
// text of the cgroup's limit file ("max", a number, or empty when there is none).
std::int64_t MachineMemoryBytes(const std::string& meminfo, const std::string& cgroup_limit);

}  // namespace sandbox
