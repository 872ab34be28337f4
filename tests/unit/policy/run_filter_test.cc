#include "sandbox/policy/run_filter.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>

#include "sandbox/policy/bpf_compiler.h"
#include "unit/policy/policy_paths.h"
#include "unit/policy/seccomp_child.h"

namespace sandbox::policy {
namespace {

using testing::ChildChecker;
using ::testing::HasSubstr;
using testing::PoliciesDir;
using testing::RunFiltered;

RunFilter LoadShipped() {
  Result<RunFilter> filter = RunFilter::LoadFile(PoliciesDir() / "seccomp-run.json");
  if (!filter.ok()) throw std::runtime_error(filter.error().ToString());
  return std::move(filter).value();
}

std::string FilterWith(const std::string& body) {
  return R"({"format": "sandbox-run-seccomp/1", "default": "allow", )" + body + "}";
}

Error ParseError(const std::string& text) {
  Result<RunFilter> filter = RunFilter::Parse(text, "run.json");
  if (filter.ok()) throw std::runtime_error("expected an error for: " + text);
  return filter.error();
}

TEST(RunFilterTest, ShippedFilterCompiles) {
  const RunFilter filter = LoadShipped();
  EXPECT_THAT(filter.origin(), HasSubstr("seccomp-run.json"));
  EXPECT_GT(filter.bpf().size(), 0u);
  EXPECT_EQ(filter.bpf().size() % kBpfInstructionSize, 0u);
  EXPECT_EQ(filter.instruction_count() * kBpfInstructionSize, filter.bpf().size());
  EXPECT_LE(filter.instruction_count(), kBpfMaxInstructions);
  EXPECT_EQ(filter.policy().default_action, SeccompAction::Allow());
}

TEST(RunFilterTest, CloneNamespaceFlagsBecomeOneRuleEach) {
  const RunFilter filter = LoadShipped();
  int clone_rules = 0;
  for (const SeccompRule& rule : filter.policy().rules) {
    if (rule.names != std::vector<std::string>{"clone"}) continue;
    ++clone_rules;
    ASSERT_EQ(rule.conditions.size(), 1u);
    EXPECT_EQ(rule.conditions[0].op, ArgCondition::Op::kMaskedEq);
    EXPECT_EQ(rule.conditions[0].mask, rule.conditions[0].value);
    EXPECT_EQ(rule.action, SeccompAction::Errno(EPERM));
  }
  EXPECT_EQ(clone_rules, 8);
}

TEST(RunFilterTest, UnknownSyscallNameIsAnErrorNamingIt) {
  const Error error =
      ParseError(FilterWith(R"("deny": [{"names": ["unshare", "unshar"], "errno": "EPERM"}])"));
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("run.json: deny[0].names[1]"));
  EXPECT_THAT(error.message(), HasSubstr("\"unshar\""));
  const Error in_deny_if = ParseError(FilterWith(
      R"("deny_if": [{"name": "clonee", "arg": 0, "any_bit_of": [1], "errno": "EPERM"}])"));
  EXPECT_THAT(in_deny_if.message(), HasSubstr("deny_if[0].name"));
  EXPECT_THAT(in_deny_if.message(), HasSubstr("\"clonee\""));
}

TEST(RunFilterTest, MalformedJsonIsAnError) {
  const Error error = ParseError(R"({"format": "sandbox-run-seccomp/1", "deny": [}")");
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("run.json: malformed JSON"));
}

TEST(RunFilterTest, MissingFileIsNotFound) {
  Result<RunFilter> filter = RunFilter::LoadFile("/nonexistent/run.json");
  ASSERT_FALSE(filter.ok());
  EXPECT_EQ(filter.error().code(), ErrorCode::kNotFound);
}

TEST(RunFilterTest, StructureErrorsAreCaught) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {R"({"default": "allow", "deny": []})", "\"format\" must be"},
      {R"({"format": "sandbox-run-seccomp/1", "default": "deny"})", "\"default\" must be"},
      {FilterWith(R"("deny": [])"), "denies nothing"},
      {FilterWith(R"("denny": [])"), "unknown key \"denny\""},
      {FilterWith(R"("deny": [{"names": ["ptrace"], "errno": "EWHAT"}])"), "unknown errno"},
      {FilterWith(R"("deny": [{"names": ["ptrace"]}])"), "missing \"errno\""},
      {FilterWith(R"("deny": [{"names": ["ptrace"], "errno": "EPERM"},
                              {"names": ["ptrace"], "errno": "EPERM"}])"),
       "denied more than once"},
      {FilterWith(R"("deny": [{"names": ["clone"], "errno": "EPERM"}],
                     "deny_if": [{"name": "clone", "arg": 0, "any_bit_of": ["CLONE_NEWNS"],
                                  "errno": "EPERM"}])"),
       "would be dead"},
      {FilterWith(R"("deny_if": [{"name": "clone", "arg": 0, "any_bit_of": ["CLONE_NEWFOO"],
                                  "errno": "EPERM"}])"),
       "unknown flag \"CLONE_NEWFOO\""},
      {FilterWith(R"("deny_if": [{"name": "clone", "arg": 0, "any_bit_of": [3],
                                  "errno": "EPERM"}])"),
       "expected a single bit"},
      {FilterWith(R"("deny_if": [{"name": "clone", "arg": 7, "any_bit_of": [1],
                                  "errno": "EPERM"}])"),
       "arguments 0..5"},
      {FilterWith(R"("deny_if": [{"name": "clone", "arg": 0, "errno": "EPERM"}])"),
       "exactly one of"},
      {FilterWith(R"("deny_if": [{"name": "clone", "arg": 0, "errno": "EPERM",
                                  "masked_eq": {"mask": 1, "value": 3}}])"),
       "bits outside the mask"},
  };
  for (const Case& c : cases) {
    const Error error = ParseError(c.text);
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << c.text;
    EXPECT_THAT(error.message(), HasSubstr(c.expected)) << c.text;
  }
}

TEST(RunFilterTest, InstalledFilterDeniesWhatTheRunMustNotDo) {
  const RunFilter filter = LoadShipped();
  const testing::ChildReport report = RunFiltered({filter.bpf()}, [](ChildChecker& check) {
    long rc = ::unshare(CLONE_NEWUSER);
    check.ExpectErrno("unshare(CLONE_NEWUSER)", rc, errno, EPERM);
    rc = ::unshare(CLONE_NEWNS);
    check.ExpectErrno("unshare(CLONE_NEWNS)", rc, errno, EPERM);
    rc = ::syscall(SYS_setns, 0, 0);
    check.ExpectErrno("setns", rc, errno, EPERM);
    rc = ::syscall(SYS_setns, -1, CLONE_NEWPID);  // what the container profile lets through
    check.ExpectErrno("setns(CLONE_NEWPID)", rc, errno, EPERM);
    rc = ::mount("none", "/tmp", "tmpfs", 0, nullptr);
    check.ExpectErrno("mount", rc, errno, EPERM);
    rc = ::umount2("/tmp", MNT_DETACH);
    check.ExpectErrno("umount2", rc, errno, EPERM);
    rc = ::syscall(SYS_pivot_root, "/", "/");
    check.ExpectErrno("pivot_root", rc, errno, EPERM);
    rc = ::chroot("/");
    check.ExpectErrno("chroot", rc, errno, EPERM);
    rc = ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    check.ExpectErrno("ptrace", rc, errno, EPERM);
    rc = ::syscall(SYS_process_vm_writev, ::getppid(), nullptr, 0, nullptr, 0, 0);
    check.ExpectErrno("process_vm_writev", rc, errno, EPERM);
    rc = ::syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
    check.ExpectErrno("keyctl", rc, errno, EPERM);
    rc = ::syscall(SYS_bpf, 0, nullptr, 0);
    check.ExpectErrno("bpf", rc, errno, EPERM);
    rc = ::syscall(SYS_io_uring_setup, 1, nullptr);
    check.ExpectErrno("io_uring_setup", rc, errno, EPERM);
    rc = ::syscall(SYS_personality, 0xffffffff);
    check.ExpectErrno("personality", rc, errno, EPERM);
    rc = ::syscall(SYS_sethostname, "x", 1);
    check.ExpectErrno("sethostname", rc, errno, EPERM);
    rc = ::syscall(SYS_clone3, nullptr, 0);
    check.ExpectErrno("clone3", rc, errno, ENOSYS);
    for (const int flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                           CLONE_NEWPID, CLONE_NEWNET}) {
      rc = ::syscall(SYS_clone, static_cast<unsigned long>(flag | SIGCHLD), 0ul, 0ul, 0ul, 0ul);
      if (rc == 0) ::_exit(0);  // the filter let it through: this is the new child
      check.ExpectErrno(("clone(flag " + std::to_string(flag) + ")").c_str(), rc, errno, EPERM);
    }
    // Ordinary work still runs.
    check.ExpectSuccess("getpid", ::getpid(), errno);
    rc = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    check.ExpectSuccess("open", rc, errno);
    rc = ::socket(AF_UNIX, SOCK_STREAM, 0);
    check.ExpectSuccess("socket(AF_UNIX)", rc, errno);
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

#if defined(__x86_64__)
// Syscalls through the i386 (int 0x80) and x32 ABIs have other numbers; the filter's
// architecture check must stop them rather than let them pass as "not in the deny list".
TEST(RunFilterTest, ForeignAbiSyscallsKillTheProcess) {
  const RunFilter filter = LoadShipped();
  // A kernel built or booted without the i386 ABI (ia32_emulation off, the default of some
  // 6.x kernels) answers int 0x80 with SIGSEGV before any filter runs: the syscall is stopped
  // either way, and only the signal differs. The children die by the signal itself, not by a
  // sanitizer's handler (which would abort instead).
  const testing::ChildReport unfiltered = RunFiltered({}, [](ChildChecker&) {
    ::signal(SIGSEGV, SIG_DFL);
    long rc = 20;  // i386 getpid
    asm volatile("int $0x80" : "+a"(rc) : : "memory");
  });
  const bool has_i386_abi = unfiltered.exited;
  const testing::ChildReport i386 = RunFiltered({filter.bpf()}, [](ChildChecker&) {
    ::signal(SIGSEGV, SIG_DFL);
    long rc = 310;  // i386 unshare; the flags go in ebx
    asm volatile("int $0x80" : "+a"(rc) : "b"(CLONE_NEWUSER) : "memory");
  });
  EXPECT_FALSE(i386.exited);
  EXPECT_EQ(i386.signal, has_i386_abi ? SIGSYS : SIGSEGV)
      << (has_i386_abi ? "the kernel has the i386 ABI" : "the kernel has no i386 ABI");
  const testing::ChildReport x32 = RunFiltered({filter.bpf()}, [](ChildChecker&) {
    long rc = 0x40000000L | SYS_unshare;
    asm volatile("syscall" : "+a"(rc) : "D"(CLONE_NEWUSER) : "rcx", "r11", "memory");
  });
  EXPECT_FALSE(x32.exited);
  EXPECT_EQ(x32.signal, SIGSYS);
}
#endif

}  // namespace
}  // namespace sandbox::policy
