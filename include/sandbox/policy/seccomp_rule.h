// The common form both policy files are parsed into (container_profile.h: Docker's format;
// run_filter.h: the project's per-run format) and that the libseccomp compiler consumes.
// Thread-safety: plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandbox::policy {

// What a filter does with a matching syscall.
struct SeccompAction {
  enum class Kind { kAllow, kErrno, kKillThread, kKillProcess, kTrap, kLog };
  Kind kind = Kind::kAllow;
  int errno_value = 0;  // kErrno only: the error the call returns (1..4095)

  static SeccompAction Allow() { return {Kind::kAllow, 0}; }
  static SeccompAction Errno(int value) { return {Kind::kErrno, value}; }
  friend bool operator==(const SeccompAction&, const SeccompAction&) = default;
};

// One comparison of a syscall argument (the full 64-bit register value, as seccomp sees it).
struct ArgCondition {
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kMaskedEq };
  unsigned index = 0;  // 0..5
  Op op = Op::kEq;
  std::uint64_t value = 0;  // compared against; for kMaskedEq: (arg & mask) == value
  std::uint64_t mask = 0;   // kMaskedEq only
  friend bool operator==(const ArgCondition&, const ArgCondition&) = default;
};

// `action` applies to each of `names` when ALL conditions hold (none: always). Several rules for
// the same syscall are alternatives (OR).
struct SeccompRule {
  std::vector<std::string> names;
  SeccompAction action;
  std::vector<ArgCondition> conditions;
};

// A whole filter for the native architecture. Syscalls of any other ABI (i386 via int 0x80, x32)
// get `bad_arch_action`.
struct SeccompPolicy {
  SeccompAction default_action;
  SeccompAction bad_arch_action{SeccompAction::Kind::kKillProcess, 0};
  std::vector<SeccompRule> rules;
};

}  // namespace sandbox::policy
