// Test helper: runs checks in a forked child after installing BPF programs there with
// prctl(PR_SET_NO_NEW_PRIVS) + prctl(PR_SET_SECCOMP), the way the harness installs the per-run
// filter, and reports what the checks found. The parent (the test) is never filtered.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sandbox::policy::testing {

// Collects failures inside the filtered child; writes each to the pipe right away, so the report
// survives the child being killed by a later check.
class ChildChecker {
 public:
  explicit ChildChecker(int fd) : fd_(fd) {}
  // Expects `rc` == -1 with errno `want`. Pass errno as it was right after the call.
  void ExpectErrno(const char* what, long rc, int error_number, int want);
  // Expects `rc` >= 0.
  void ExpectSuccess(const char* what, long rc, int error_number);
  void Fail(const std::string& message);

 private:
  int fd_;
};

struct ChildReport {
  bool exited = false;  // exited normally (else killed)
  int exit_code = -1;
  int signal = 0;
  std::string failures;  // one line per failed check; empty when all passed
};

// Forks; the child installs each program of `programs` in order (stacking them), runs `checks`
// and exits 0. A program that cannot be installed is reported as a failure.
ChildReport RunFiltered(const std::vector<std::string>& programs,
                        const std::function<void(ChildChecker&)>& checks);

}  // namespace sandbox::policy::testing
