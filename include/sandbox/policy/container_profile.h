// ContainerProfile: the container's seccomp profile (policies/seccomp-container.json), in Docker's
// profile format, checked at start-up and handed to the engine as
// HostConfig.SecurityOpt "seccomp=<compact JSON text>". It replaces Docker's default profile.
//
// Loading checks more than Docker does, so that a broken profile stops the server at start-up
// instead of producing containers that fail oddly:
// - every syscall name is known to libseccomp (runc silently ignores unknown names);
// - keys, actions ("SCMP_ACT_*") and comparison ops ("SCMP_CMP_*") are known; errnoRet only with
//   SCMP_ACT_ERRNO; valueTwo only with SCMP_CMP_MASKED_EQ; argument indexes 0..5;
// - rules are unconditional: "includes"/"excludes" (Docker's capability and arch switches) are
//   refused, so what the file says is what every container gets;
// - a rule compares each argument at most once (runc turns repeated indexes into an OR of separate
//   rules, which reads like an AND and is not);
// - a syscall listed in an unconditional rule appears in no other rule (libseccomp would merge or
//   ignore the other rule without a word).
// Thread-safety: immutable after loading; const methods are safe from any thread.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "sandbox/core/result.h"
#include "sandbox/policy/seccomp_rule.h"

namespace sandbox::policy {

class ContainerProfile {
 public:
  // Reads and checks the profile at `path`; errors name the file.
  static Result<ContainerProfile> LoadFile(const std::filesystem::path& path);
  // Checks profile text; `origin` (a path, "<config>") prefixes error messages.
  static Result<ContainerProfile> Parse(std::string_view json_text, std::string_view origin);

  // The profile as compact JSON without "comment" members: the text Docker gets.
  const std::string& compact_json() const { return compact_json_; }
  // "seccomp=" + compact_json(): one entry of HostConfig.SecurityOpt.
  std::string SecurityOpt() const { return "seccomp=" + compact_json_; }
  const std::string& origin() const { return origin_; }
  // The rules as parsed (default action, native-architecture rules).
  const SeccompPolicy& policy() const { return policy_; }

  // The profile compiled with libseccomp for the native architecture, as runc would load it
  // except for runc's extra stub that answers ENOSYS for syscalls newer than any the profile
  // names. For tests that check the profile's effect without an engine.
  Result<std::string> CompileBpf() const;

 private:
  ContainerProfile(std::string origin, std::string compact_json, SeccompPolicy policy)
      : origin_(std::move(origin)),
        compact_json_(std::move(compact_json)),
        policy_(std::move(policy)) {}

  std::string origin_;
  std::string compact_json_;
  SeccompPolicy policy_;
};

}  // namespace sandbox::policy
