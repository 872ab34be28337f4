#include "syscall_names.h"

#include <seccomp.h>

#include <string>

namespace sandbox::policy {

Result<int> ResolveSyscall(std::string_view name) {
  const std::string owned(name);  // NUL-terminated copy for the C API
  const int number = seccomp_syscall_resolve_name(owned.c_str());
  if (number == __NR_SCMP_ERROR) {
    return Error(ErrorCode::kInvalidArgument, "unknown syscall \"" + owned + "\" (libseccomp " +
                                                  LibseccompVersion() +
                                                  " does not know this name)");
  }
  return number;
}

std::string LibseccompVersion() {
  const scmp_version* version = seccomp_version();
  return std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
         std::to_string(version->micro);
}

}  // namespace sandbox::policy
