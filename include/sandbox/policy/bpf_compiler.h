// Compiles a SeccompPolicy into a classic BPF program with libseccomp, for the native
// architecture. The program starts with libseccomp's architecture check, so syscalls of another
// ABI (i386 int 0x80, x32) get the policy's bad_arch_action instead of being matched by number.
// Thread-safety: stateless; safe from any thread (each call builds its own libseccomp context).
#pragma once

#include <cstddef>
#include <string>

#include "sandbox/core/result.h"
#include "sandbox/policy/seccomp_rule.h"

namespace sandbox::policy {

// Size of one struct sock_filter instruction, and the kernel's limit on a program's length.
inline constexpr std::size_t kBpfInstructionSize = 8;
inline constexpr std::size_t kBpfMaxInstructions = 4096;

// The program as raw bytes: an array of struct sock_filter in host byte order, ready for
// prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &(struct sock_fprog){size / 8, bytes}).
// Rules whose action equals the default action are skipped (they change nothing; libseccomp
// refuses them). Errors name the offending syscall: kInvalidArgument for unknown names or rules
// libseccomp rejects, kLimit when the program exceeds kBpfMaxInstructions, kInternal otherwise.
Result<std::string> CompileBpf(const SeccompPolicy& policy);

}  // namespace sandbox::policy
