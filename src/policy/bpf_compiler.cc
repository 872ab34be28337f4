#include "sandbox/policy/bpf_compiler.h"

#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "syscall_names.h"

namespace sandbox::policy {
namespace {

struct ContextDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

std::uint32_t ToScmpAction(const SeccompAction& action) {
  switch (action.kind) {
    case SeccompAction::Kind::kAllow:
      return SCMP_ACT_ALLOW;
    case SeccompAction::Kind::kErrno:
      return SCMP_ACT_ERRNO(static_cast<std::uint32_t>(action.errno_value));
    case SeccompAction::Kind::kKillThread:
      return SCMP_ACT_KILL_THREAD;
    case SeccompAction::Kind::kKillProcess:
      return SCMP_ACT_KILL_PROCESS;
    case SeccompAction::Kind::kTrap:
      return SCMP_ACT_TRAP;
    case SeccompAction::Kind::kLog:
      return SCMP_ACT_LOG;
  }
  return SCMP_ACT_KILL_PROCESS;
}

scmp_compare ToScmpOp(ArgCondition::Op op) {
  switch (op) {
    case ArgCondition::Op::kEq:
      return SCMP_CMP_EQ;
    case ArgCondition::Op::kNe:
      return SCMP_CMP_NE;
    case ArgCondition::Op::kLt:
      return SCMP_CMP_LT;
    case ArgCondition::Op::kLe:
      return SCMP_CMP_LE;
    case ArgCondition::Op::kGt:
      return SCMP_CMP_GT;
    case ArgCondition::Op::kGe:
      return SCMP_CMP_GE;
    case ArgCondition::Op::kMaskedEq:
      return SCMP_CMP_MASKED_EQ;
  }
  return SCMP_CMP_EQ;
}

Error LibseccompError(std::string_view what, int rc) {
  return Error(ErrorCode::kInternal, std::string(what) + ": " + ErrnoText(-rc));
}

// seccomp_export_bpf writes to a descriptor (libseccomp 2.5 has no in-memory export): use a memfd.
Result<std::string> Export(void* ctx) {
  const int fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
  if (fd < 0) return Error(ErrorCode::kInternal, std::string("memfd_create: ") + ErrnoText(errno));
  const FdCloser closer{fd};
  if (const int rc = seccomp_export_bpf(ctx, fd); rc != 0) {
    return LibseccompError("seccomp_export_bpf", rc);
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    return Error(ErrorCode::kInternal, std::string("lseek: ") + ErrnoText(errno));
  }
  std::string bytes;
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error(ErrorCode::kInternal, std::string("read: ") + ErrnoText(errno));
    if (n == 0) break;
    bytes.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return bytes;
}

}  // namespace

Result<std::string> CompileBpf(const SeccompPolicy& policy) {
  Context ctx(seccomp_init(ToScmpAction(policy.default_action)));
  if (!ctx) return Error(ErrorCode::kInternal, "seccomp_init failed");
  if (const int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH,
                                      ToScmpAction(policy.bad_arch_action));
      rc != 0) {
    return LibseccompError("seccomp_attr_set(ACT_BADARCH)", rc);
  }
  // Only seccomp_load reads this attribute; the program is exported instead, and whoever installs
  // it (the harness, a test) sets no_new_privs itself. Off, so the context says what happens.
  if (const int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc != 0) {
    return LibseccompError("seccomp_attr_set(CTL_NNP)", rc);
  }
  for (const SeccompRule& rule : policy.rules) {
    if (rule.action == policy.default_action) continue;
    std::vector<scmp_arg_cmp> conditions;
    for (const ArgCondition& c : rule.conditions) {
      scmp_arg_cmp cmp{};
      cmp.arg = c.index;
      cmp.op = ToScmpOp(c.op);
      // libseccomp's masked equality takes (mask, value) in datum_a, datum_b.
      cmp.datum_a = c.op == ArgCondition::Op::kMaskedEq ? c.mask : c.value;
      cmp.datum_b = c.op == ArgCondition::Op::kMaskedEq ? c.value : 0;
      conditions.push_back(cmp);
    }
    for (const std::string& name : rule.names) {
      Result<int> number = ResolveSyscall(name);
      if (!number.ok()) return number.error();
      const int rc =
          seccomp_rule_add_array(ctx.get(), ToScmpAction(rule.action), *number,
                                 static_cast<unsigned>(conditions.size()), conditions.data());
      if (rc != 0) {
        return Error(ErrorCode::kInvalidArgument, "libseccomp rejected the rule for syscall \"" +
                                                      name + "\": " + ErrnoText(-rc));
      }
    }
  }
  Result<std::string> bytes = Export(ctx.get());
  if (!bytes.ok()) return bytes.error();
  if (bytes->empty() || bytes->size() % kBpfInstructionSize != 0) {
    return Error(ErrorCode::kInternal, "libseccomp exported " + std::to_string(bytes->size()) +
                                           " bytes, not a whole number of BPF instructions");
  }
  if (bytes->size() / kBpfInstructionSize > kBpfMaxInstructions) {
    return Error(ErrorCode::kLimit, "the compiled filter has " +
                                        std::to_string(bytes->size() / kBpfInstructionSize) +
                                        " instructions, more than the kernel's limit of " +
                                        std::to_string(kBpfMaxInstructions));
  }
  return bytes;
}

}  // namespace sandbox::policy
