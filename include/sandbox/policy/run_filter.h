// RunFilter: the per-run seccomp filter (policies/seccomp-run.json), compiled once at start-up
// into a raw BPF program that the harness installs in every run's process after it has set up
// the run's namespaces and before the user's code starts:
//   prctl(PR_SET_NO_NEW_PRIVS, 1); prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sock_fprog)
// with sock_fprog = {bpf().size() / 8, bpf().data()} (ctypes only; the container needs no seccomp
// library). The filter stacks on the container's profile: the kernel runs both and the stricter
// answer wins, so this file lists only what the harness itself needed and the user's code must
// not have, and allows everything else. prctl(PR_SET_SECCOMP) binds only the calling thread and
// its future children: install it in a single-threaded process (a fresh fork() child is one).
//
// File format ("format": "sandbox-run-seccomp/1", documented in policies/README.md):
//   {"default": "allow",
//    "deny":    [{"names": ["unshare", ...], "errno": "EPERM", "comment": "..."}],
//    "deny_if": [{"name": "clone", "arg": 0, "any_bit_of": ["CLONE_NEWUSER", ...],
//                 "errno": "EPERM"},
//                {"name": "...", "arg": 1, "masked_eq": {"mask": 12, "value": 4}, "errno": ...}]}
// "any_bit_of" denies the call when any of the listed bits is set in the argument (one masked
// comparison per bit); flags are CLONE_NEW* names or single-bit integers. Errno names: EPERM,
// EACCES, EINVAL, ENOSYS, EOPNOTSUPP. Syscalls of a foreign ABI (i386 int 0x80, x32) kill the
// process. Unknown keys, unknown syscall names and a syscall in both "deny" and "deny_if" are
// errors.
//
// The program is compiled for the server's native architecture: the engine must share the
// server's kernel architecture (true whenever they run on the same machine).
// Thread-safety: immutable after loading; const methods are safe from any thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "sandbox/core/result.h"
#include "sandbox/policy/bpf_compiler.h"
#include "sandbox/policy/seccomp_rule.h"

namespace sandbox::policy {

class RunFilter {
 public:
  // Reads, checks and compiles the filter at `path`; errors name the file.
  static Result<RunFilter> LoadFile(const std::filesystem::path& path);
  // The same for text; `origin` prefixes error messages.
  static Result<RunFilter> Parse(std::string_view json_text, std::string_view origin);

  // The compiled program: struct sock_filter[], host byte order, size a non-zero multiple of 8.
  const std::string& bpf() const { return bpf_; }
  std::size_t instruction_count() const { return bpf_.size() / kBpfInstructionSize; }
  const SeccompPolicy& policy() const { return policy_; }
  const std::string& origin() const { return origin_; }

 private:
  RunFilter(std::string origin, SeccompPolicy policy, std::string bpf)
      : origin_(std::move(origin)), policy_(std::move(policy)), bpf_(std::move(bpf)) {}

  std::string origin_;
  SeccompPolicy policy_;
  std::string bpf_;
};

}  // namespace sandbox::policy
