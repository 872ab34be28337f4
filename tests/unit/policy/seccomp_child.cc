#include "unit/policy/seccomp_child.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace sandbox::policy::testing {

void ChildChecker::Fail(const std::string& message) {
  const std::string line = message + "\n";
  [[maybe_unused]] const ssize_t written = ::write(fd_, line.data(), line.size());
}

void ChildChecker::ExpectErrno(const char* what, long rc, int error_number, int want) {
  if (rc == -1 && error_number == want) return;
  Fail(std::string(what) + ": rc=" + std::to_string(rc) + " errno=" + std::strerror(error_number) +
       ", wanted " + std::strerror(want));
}

void ChildChecker::ExpectSuccess(const char* what, long rc, int error_number) {
  if (rc >= 0) return;
  Fail(std::string(what) + ": failed with " + std::strerror(error_number));
}

ChildReport RunFiltered(const std::vector<std::string>& programs,
                        const std::function<void(ChildChecker&)>& checks) {
  ChildReport report;
  std::array<int, 2> fds{};
  if (::pipe(fds.data()) != 0) {
    report.failures = "pipe failed";
    return report;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    report.failures = "fork failed";
    return report;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ChildChecker checker(fds[1]);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      checker.Fail("PR_SET_NO_NEW_PRIVS failed");
      ::_exit(1);
    }
    for (const std::string& program : programs) {
      sock_fprog fprog{};
      fprog.len = static_cast<unsigned short>(program.size() / sizeof(sock_filter));
      // The kernel only reads the program; prctl's interface is not const-correct.
      fprog.filter = reinterpret_cast<sock_filter*>(const_cast<char*>(program.data()));
      if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0) {
        checker.Fail(std::string("PR_SET_SECCOMP failed: ") + std::strerror(errno));
        ::_exit(1);
      }
    }
    checks(checker);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.failures.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  report.exited = WIFEXITED(status);
  report.exit_code = report.exited ? WEXITSTATUS(status) : -1;
  report.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return report;
}

}  // namespace sandbox::policy::testing
