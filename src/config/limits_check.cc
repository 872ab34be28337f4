#include "sandbox/config/limits_check.h"

namespace sandbox::config {

std::optional<std::string_view> FirstLimitOver(const Limits& l, const Limits& max) {
  if (l.timeout_s > max.timeout_s) return "timeout_s";
  if (l.memory_bytes > max.memory_bytes) return "memory_bytes";
  if (l.cpus > max.cpus) return "cpus";
  if (l.pids > max.pids) return "pids";
  if (l.nproc > max.nproc) return "nproc";
  if (l.nofile > max.nofile) return "nofile";
  if (l.fsize_bytes > max.fsize_bytes) return "fsize_bytes";
  if (l.tmpfs_bytes > max.tmpfs_bytes) return "tmpfs_bytes";
  if (l.output_bytes > max.output_bytes) return "output_bytes";
  return std::nullopt;
}

}  // namespace sandbox::config
