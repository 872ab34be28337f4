#include "sandbox/policy/container_profile.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/policy/run_filter.h"
#include "unit/policy/policy_paths.h"
#include "unit/policy/seccomp_child.h"

namespace sandbox::policy {
namespace {

using testing::ChildChecker;
using ::testing::HasSubstr;
using testing::PoliciesDir;
using testing::RunFiltered;

ContainerProfile LoadShipped() {
  Result<ContainerProfile> profile =
      ContainerProfile::LoadFile(PoliciesDir() / "seccomp-container.json");
  if (!profile.ok()) throw std::runtime_error(profile.error().ToString());
  return std::move(profile).value();
}

// A minimal valid profile with `rules` as its syscalls list.
std::string ProfileWith(const std::string& rules) {
  return R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1, "syscalls": [)" + rules +
         "]}";
}

Error ParseError(const std::string& text) {
  Result<ContainerProfile> profile = ContainerProfile::Parse(text, "test.json");
  if (profile.ok()) throw std::runtime_error("expected an error for: " + text);
  return profile.error();
}

TEST(ContainerProfileTest, ShippedProfileLoads) {
  const ContainerProfile profile = LoadShipped();
  EXPECT_THAT(profile.origin(), HasSubstr("seccomp-container.json"));
  EXPECT_EQ(profile.policy().default_action, SeccompAction::Errno(EPERM));
  EXPECT_GT(profile.policy().rules.size(), 5u);
}

TEST(ContainerProfileTest, SecurityOptIsCompactJsonWithoutComments) {
  const ContainerProfile profile = LoadShipped();
  EXPECT_EQ(profile.SecurityOpt(), "seccomp=" + profile.compact_json());
  EXPECT_EQ(profile.compact_json().find('\n'), std::string::npos);
  EXPECT_EQ(profile.compact_json().find("\"comment\""), std::string::npos);
  const nlohmann::json parsed = nlohmann::json::parse(profile.compact_json());
  EXPECT_EQ(parsed.at("defaultAction"), "SCMP_ACT_ERRNO");
  EXPECT_EQ(parsed.at("defaultErrnoRet"), 1);
  // 64-bit masks survive the round trip as exact unsigned integers.
  bool found_unshare = false;
  for (const auto& rule : parsed.at("syscalls")) {
    if (rule.at("names") == nlohmann::json::array({"unshare"})) {
      found_unshare = true;
      EXPECT_TRUE(rule.at("args")[0].at("value").is_number_unsigned());
      EXPECT_GT(rule.at("args")[0].at("value").get<std::uint64_t>(), 0xFFFFFFFFull);
    }
  }
  EXPECT_TRUE(found_unshare);
}

TEST(ContainerProfileTest, Clone3AnswersEnosys) {
  const ContainerProfile profile = LoadShipped();
  bool found = false;
  for (const SeccompRule& rule : profile.policy().rules) {
    if (rule.names == std::vector<std::string>{"clone3"}) {
      found = true;
      EXPECT_EQ(rule.action, SeccompAction::Errno(ENOSYS));
      EXPECT_TRUE(rule.conditions.empty());
    }
  }
  EXPECT_TRUE(found);
}

TEST(ContainerProfileTest, UnknownSyscallNameIsAnErrorNamingIt) {
  const Error error = ParseError(
      ProfileWith(R"({"names": ["read", "no_such_syscall"], "action": "SCMP_ACT_ALLOW"})"));
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("test.json"));
  EXPECT_THAT(error.message(), HasSubstr("syscalls[0].names[1]"));
  EXPECT_THAT(error.message(), HasSubstr("\"no_such_syscall\""));
}

TEST(ContainerProfileTest, ErrorsFromAFileNameTheFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("policy-test-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << ProfileWith(R"({"names": ["raed"], "action": "SCMP_ACT_ALLOW"})");
  Result<ContainerProfile> profile = ContainerProfile::LoadFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(profile.ok());
  EXPECT_THAT(profile.error().message(), HasSubstr(path.string()));
  EXPECT_THAT(profile.error().message(), HasSubstr("\"raed\""));
}

TEST(ContainerProfileTest, MissingFileIsNotFound) {
  Result<ContainerProfile> profile = ContainerProfile::LoadFile("/nonexistent/profile.json");
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code(), ErrorCode::kNotFound);
  EXPECT_THAT(profile.error().message(), HasSubstr("/nonexistent/profile.json"));
}

TEST(ContainerProfileTest, MalformedJsonIsAnError) {
  const Error error = ParseError(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [)");
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("test.json: malformed JSON"));
}

TEST(ContainerProfileTest, StructureErrorsAreCaught) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"[]", "expected an object"},
      {R"({"syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]})",
       "test.json: defaultAction: missing"},
      {R"({"defaultAction": "SCMP_ACT_DENY", "syscalls": []})", "unknown or unsupported action"},
      {R"({"defaultAction": "SCMP_ACT_ERRNO"})", "\"syscalls\" must be a non-empty list"},
      {R"({"defaultAction": "SCMP_ACT_ALLOW", "defaultErrnoRet": 1, "syscalls": []})",
       "only meaningful with SCMP_ACT_ERRNO"},
      {R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrno": 1, "syscalls": []})",
       "unknown key \"defaultErrno\""},
      {R"({"defaultAction": "SCMP_ACT_ERRNO", "archMap": [{"architecture": "SCMP_ARCH_Z80"}],
           "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]})",
       "unknown architecture"},
      {ProfileWith(R"({"names": ["read"], "action": "SCMP_ACT_ALLOW", "errnoret": 1})"),
       "syscalls[0]: unknown key \"errnoret\""},
      {ProfileWith(R"({"names": ["read"], "action": "SCMP_ACT_TRACE"})"),
       "unknown or unsupported action \"SCMP_ACT_TRACE\""},
      {ProfileWith(R"({"names": [], "action": "SCMP_ACT_ALLOW"})"), "non-empty list"},
      {ProfileWith(R"({"names": ["read", "read"], "action": "SCMP_ACT_ALLOW"})"), "listed twice"},
      {ProfileWith(R"({"names": ["read"], "action": "SCMP_ACT_ERRNO", "errnoRet": 5000})"),
       "must be 1..4095"},
      {ProfileWith(R"({"names": ["read"], "action": "SCMP_ACT_ALLOW",
                       "includes": {"caps": ["CAP_SYS_ADMIN"]}})"),
       "\"includes\"/\"excludes\" are not supported"},
      {ProfileWith(R"({"names": ["socket"], "action": "SCMP_ACT_ALLOW",
                       "args": [{"index": 6, "value": 1, "op": "SCMP_CMP_EQ"}]})"),
       "arguments 0..5"},
      {ProfileWith(R"({"names": ["socket"], "action": "SCMP_ACT_ALLOW",
                       "args": [{"index": 0, "value": -1, "op": "SCMP_CMP_EQ"}]})"),
       "expected a number >= 0"},
      {ProfileWith(R"({"names": ["socket"], "action": "SCMP_ACT_ALLOW",
                       "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_LIKE"}]})"),
       "unknown op"},
      {ProfileWith(R"({"names": ["socket"], "action": "SCMP_ACT_ALLOW",
                       "args": [{"index": 0, "value": 1, "valueTwo": 2, "op": "SCMP_CMP_EQ"}]})"),
       "only meaningful with SCMP_CMP_MASKED_EQ"},
      {ProfileWith(R"({"names": ["socket"], "action": "SCMP_ACT_ALLOW",
                       "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"},
                                {"index": 0, "value": 2, "op": "SCMP_CMP_EQ"}]})"),
       "compared twice in one rule"},
      {ProfileWith(R"({"names": ["read", "unshare"], "action": "SCMP_ACT_ALLOW"},
                      {"names": ["unshare"], "action": "SCMP_ACT_ALLOW",
                       "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"}]})"),
       "\"unshare\" is listed unconditionally here and again in syscalls[1]"},
  };
  for (const Case& c : cases) {
    const Error error = ParseError(c.text);
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << c.text;
    EXPECT_THAT(error.message(), HasSubstr(c.expected)) << c.text;
    EXPECT_THAT(error.message(), HasSubstr("test.json")) << c.text;
  }
}

TEST(ContainerProfileTest, AcceptsNamesOfOtherArchitectures) {
  // "chown32" exists on i386 only; Docker's own profile lists such names for every arch.
  Result<ContainerProfile> profile = ContainerProfile::Parse(
      ProfileWith(R"({"names": ["read", "chown32"], "action": "SCMP_ACT_ALLOW"})"), "test.json");
  ASSERT_TRUE(profile.ok()) << profile.error().ToString();
  EXPECT_TRUE(profile->CompileBpf().ok());
}

TEST(ContainerProfileTest, CompiledProfileDeniesWhatItShould) {
  const Result<std::string> bpf = LoadShipped().CompileBpf();
  ASSERT_TRUE(bpf.ok()) << bpf.error().ToString();
  ASSERT_EQ(bpf->size() % 8, 0u);
  const testing::ChildReport report = RunFiltered({*bpf}, [](ChildChecker& check) {
    long rc = ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    check.ExpectErrno("ptrace", rc, errno, EPERM);
    rc = ::syscall(SYS_process_vm_readv, ::getppid(), nullptr, 0, nullptr, 0, 0);
    check.ExpectErrno("process_vm_readv", rc, errno, EPERM);
    rc = ::syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
    check.ExpectErrno("keyctl", rc, errno, EPERM);
    rc = ::syscall(SYS_add_key, "user", "k", "v", 1, KEY_SPEC_SESSION_KEYRING);
    check.ExpectErrno("add_key", rc, errno, EPERM);
    rc = ::syscall(SYS_bpf, 0, nullptr, 0);
    check.ExpectErrno("bpf", rc, errno, EPERM);
    rc = ::syscall(SYS_io_uring_setup, 1, nullptr);
    check.ExpectErrno("io_uring_setup", rc, errno, EPERM);
    rc = ::syscall(SYS_userfaultfd, 0);
    check.ExpectErrno("userfaultfd", rc, errno, EPERM);
    rc = ::syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0);
    check.ExpectErrno("perf_event_open", rc, errno, EPERM);
    rc = ::syscall(SYS_setns, 0, 0);
    check.ExpectErrno("setns", rc, errno, EPERM);
    rc = ::syscall(SYS_setns, -1, CLONE_NEWUSER);
    check.ExpectErrno("setns(CLONE_NEWUSER)", rc, errno, EPERM);
    rc = ::syscall(SYS_setns, -1, CLONE_NEWNS);
    check.ExpectErrno("setns(CLONE_NEWNS)", rc, errno, EPERM);
    rc = ::syscall(SYS_setns, -1, (1ul << 32) | CLONE_NEWPID);
    check.ExpectErrno("setns(CLONE_NEWPID | 1 << 32)", rc, errno, EPERM);
    // The harness's forker enters its own PID namespace again: the profile lets it through
    // (EBADF from the kernel for the bad descriptor, not EPERM from the filter).
    rc = ::syscall(SYS_setns, -1, CLONE_NEWPID);
    check.ExpectErrno("setns(CLONE_NEWPID)", rc, errno, EBADF);
    rc = ::syscall(SYS_clone3, nullptr, 0);
    check.ExpectErrno("clone3", rc, errno, ENOSYS);
    rc = ::syscall(SYS_clone, static_cast<unsigned long>(CLONE_NEWUSER | SIGCHLD), 0ul, 0ul, 0ul,
                   0ul);
    if (rc == 0) ::_exit(0);  // the filter let it through: this is the child
    check.ExpectErrno("clone(CLONE_NEWUSER)", rc, errno, EPERM);
    rc = ::unshare(CLONE_NEWNET);
    check.ExpectErrno("unshare(CLONE_NEWNET)", rc, errno, EPERM);
    rc = ::syscall(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */);
    check.ExpectErrno("personality(ADDR_NO_RANDOMIZE)", rc, errno, EPERM);
    rc = ::socket(AF_NETLINK, SOCK_RAW, 0);
    check.ExpectErrno("socket(AF_NETLINK)", rc, errno, EPERM);
    rc = ::syscall(SYS_socket, (1ul << 32) | AF_INET, SOCK_STREAM, 0);
    check.ExpectErrno("socket(AF_INET | 1 << 32)", rc, errno, EPERM);
    // What must keep working.
    rc = ::socket(AF_UNIX, SOCK_STREAM, 0);
    check.ExpectSuccess("socket(AF_UNIX)", rc, errno);
    rc = ::socket(AF_INET6, SOCK_DGRAM, 0);
    check.ExpectSuccess("socket(AF_INET6)", rc, errno);
    rc = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    check.ExpectSuccess("open", rc, errno);
    rc = ::syscall(SYS_personality, 0xffffffff);
    check.ExpectSuccess("personality(query)", rc, errno);
    const pid_t child = ::fork();
    if (child == 0) ::_exit(7);
    check.ExpectSuccess("fork", child, errno);
    int status = 0;
    rc = ::waitpid(child, &status, 0);
    check.ExpectSuccess("waitpid", rc, errno);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) check.Fail("forked child misbehaved");
  });
  EXPECT_EQ(report.failures, "");
  EXPECT_TRUE(report.exited) << "signal " << report.signal;
  EXPECT_EQ(report.exit_code, 0);
}

TEST(ContainerProfileTest, CompiledProfileAllowsTheHarnessUnshare) {
  const Result<std::string> bpf = LoadShipped().CompileBpf();
  ASSERT_TRUE(bpf.ok()) << bpf.error().ToString();
  constexpr int kHarnessFlags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC;
  // Where the kernel itself refuses user namespaces (a chroot, a sysctl), there is nothing to
  // compare: the filter must then only not change the answer.
  const testing::ChildReport unfiltered = RunFiltered({}, [](ChildChecker& check) {
    check.ExpectSuccess("unshare without a filter", ::unshare(kHarnessFlags), errno);
  });
  const bool kernel_allows = unfiltered.failures.empty();
  const testing::ChildReport report = RunFiltered({*bpf}, [&](ChildChecker& check) {
    const long refused = ::unshare(CLONE_NEWUSER | CLONE_NEWNET);
    check.ExpectErrno("unshare(NEWUSER|NEWNET)", refused, errno, EPERM);
    if (kernel_allows) {
      check.ExpectSuccess("unshare(NEWUSER|NEWNS|NEWPID|NEWIPC)", ::unshare(kHarnessFlags), errno);
    }
  });
  EXPECT_EQ(report.failures, "");
  EXPECT_EQ(report.exit_code, 0);
  if (!kernel_allows) GTEST_SKIP() << "user namespaces unavailable here: " << unfiltered.failures;
}

TEST(ContainerProfileTest, RunFilterStacksOnTheProfile) {
  const Result<std::string> profile_bpf = LoadShipped().CompileBpf();
  ASSERT_TRUE(profile_bpf.ok()) << profile_bpf.error().ToString();
  Result<RunFilter> run_filter = RunFilter::LoadFile(PoliciesDir() / "seccomp-run.json");
  ASSERT_TRUE(run_filter.ok()) << run_filter.error().ToString();
  const testing::ChildReport report =
      RunFiltered({*profile_bpf, run_filter->bpf()}, [](ChildChecker& check) {
        long rc = ::unshare(CLONE_NEWUSER);
        check.ExpectErrno("unshare(CLONE_NEWUSER)", rc, errno, EPERM);
        rc = ::syscall(SYS_clone3, nullptr, 0);
        check.ExpectErrno("clone3", rc, errno, ENOSYS);
        const pid_t child = ::fork();
        if (child == 0) ::_exit(0);
        check.ExpectSuccess("fork", child, errno);
        int status = 0;
        rc = ::waitpid(child, &status, 0);
        check.ExpectSuccess("waitpid", rc, errno);
      });
  EXPECT_EQ(report.failures, "");
  EXPECT_EQ(report.exit_code, 0);
}

}  // namespace
}  // namespace sandbox::policy
