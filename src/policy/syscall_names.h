// Syscall names as libseccomp knows them. Both policy files name syscalls; a name libseccomp does
// not know is a typo or a syscall newer than the library, and either way a start-up error rather
// than a silently ignored rule (runc ignores unknown names).
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "sandbox/core/result.h"

namespace sandbox::policy {

// The syscall number of `name` on the native architecture. Known syscalls that do not exist on
// this architecture (e.g. "chown32" on x86-64) resolve to libseccomp's negative pseudo numbers,
// which rules accept and ignore. kInvalidArgument for a name libseccomp does not know at all.
Result<int> ResolveSyscall(std::string_view name);

// "2.5.4": the libseccomp the process runs with, for error messages and logs.
std::string LibseccompVersion();

}  // namespace sandbox::policy
