#include "sandbox/policy/run_filter.h"

#include <cerrno>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "policy_file.h"
#include "sandbox/policy/bpf_compiler.h"
#include "syscall_names.h"

namespace sandbox::policy {
namespace {

using internal::CheckObject;
using internal::GetString;
using internal::GetUint;
using internal::InvalidAt;
using nlohmann::json;

constexpr std::string_view kFormat = "sandbox-run-seccomp/1";

// The namespace flags of clone/unshare (linux/sched.h), by name, so the file reads as intended.
// CLONE_NEWTIME shares its bit with the exit-signal byte of clone(), where the kernel ignores it;
// a signal number never has that bit, so denying it costs nothing and covers unshare-like uses.
const std::map<std::string, std::uint64_t, std::less<>>& FlagNames() {
  static const std::map<std::string, std::uint64_t, std::less<>> kFlags = {
      {"CLONE_NEWTIME", 0x00000080}, {"CLONE_NEWNS", 0x00020000},  {"CLONE_NEWCGROUP", 0x02000000},
      {"CLONE_NEWUTS", 0x04000000},  {"CLONE_NEWIPC", 0x08000000}, {"CLONE_NEWUSER", 0x10000000},
      {"CLONE_NEWPID", 0x20000000},  {"CLONE_NEWNET", 0x40000000},
  };
  return kFlags;
}

Result<int> ParseErrno(const json& entry, const std::string& where) {
  static const std::map<std::string, int, std::less<>> kErrnos = {
      {"EPERM", EPERM},   {"EACCES", EACCES},         {"EINVAL", EINVAL},
      {"ENOSYS", ENOSYS}, {"EOPNOTSUPP", EOPNOTSUPP},
  };
  if (!entry.contains("errno")) return InvalidAt(where, "missing \"errno\"");
  Result<std::string> name = GetString(entry.at("errno"), where + ".errno");
  if (!name.ok()) return name.error();
  const auto it = kErrnos.find(*name);
  if (it == kErrnos.end()) {
    return InvalidAt(where + ".errno", "unknown errno \"" + *name +
                                           "\" (known: EPERM, EACCES, EINVAL, ENOSYS, "
                                           "EOPNOTSUPP)");
  }
  return it->second;
}

Result<std::string> ParseSyscallName(const json& value, const std::string& where) {
  Result<std::string> name = GetString(value, where);
  if (!name.ok()) return name.error();
  if (Result<int> number = ResolveSyscall(*name); !number.ok()) {
    return InvalidAt(where, number.error().message());
  }
  return name;
}

Result<std::uint64_t> ParseBit(const json& value, const std::string& where) {
  if (value.is_string()) {
    const std::string name = value.get<std::string>();
    const auto it = FlagNames().find(name);
    if (it == FlagNames().end()) return InvalidAt(where, "unknown flag \"" + name + "\"");
    return it->second;
  }
  Result<std::uint64_t> bit = GetUint(value, where);
  if (!bit.ok()) return bit.error();
  if (*bit == 0 || (*bit & (*bit - 1)) != 0) return InvalidAt(where, "expected a single bit");
  return bit;
}

// One "deny_if" entry: one rule per bit for "any_bit_of", one rule for "masked_eq".
Status ParseDenyIf(const json& entry, const std::string& where, std::vector<SeccompRule>& rules,
                   std::string& name_out) {
  SANDBOX_RETURN_IF_ERROR(
      CheckObject(entry, where, {"comment", "name", "arg", "any_bit_of", "masked_eq", "errno"}));
  if (!entry.contains("name")) return InvalidAt(where, "missing \"name\"");
  Result<std::string> name = ParseSyscallName(entry.at("name"), where + ".name");
  if (!name.ok()) return name.error();
  name_out = *name;
  if (!entry.contains("arg")) return InvalidAt(where, "missing \"arg\"");
  Result<std::uint64_t> arg = GetUint(entry.at("arg"), where + ".arg");
  if (!arg.ok()) return arg.error();
  if (*arg > 5) return InvalidAt(where + ".arg", "syscalls have arguments 0..5");
  Result<int> error_number = ParseErrno(entry, where);
  if (!error_number.ok()) return error_number.error();
  const bool any_bits = entry.contains("any_bit_of");
  if (any_bits == entry.contains("masked_eq")) {
    return InvalidAt(where, "needs exactly one of \"any_bit_of\" and \"masked_eq\"");
  }
  auto add_rule = [&](std::uint64_t mask, std::uint64_t value) {
    ArgCondition condition;
    condition.index = static_cast<unsigned>(*arg);
    condition.op = ArgCondition::Op::kMaskedEq;
    condition.mask = mask;
    condition.value = value;
    rules.push_back(SeccompRule{{*name}, SeccompAction::Errno(*error_number), {condition}});
  };
  if (any_bits) {
    const json& bits = entry.at("any_bit_of");
    if (!bits.is_array() || bits.empty()) {
      return InvalidAt(where + ".any_bit_of", "expected a non-empty list of flags");
    }
    for (std::size_t i = 0; i < bits.size(); ++i) {
      Result<std::uint64_t> bit =
          ParseBit(bits[i], where + ".any_bit_of[" + std::to_string(i) + "]");
      if (!bit.ok()) return bit.error();
      add_rule(*bit, *bit);
    }
    return OkStatus();
  }
  const json& masked = entry.at("masked_eq");
  const std::string masked_where = where + ".masked_eq";
  SANDBOX_RETURN_IF_ERROR(CheckObject(masked, masked_where, {"mask", "value"}));
  if (!masked.contains("mask") || !masked.contains("value")) {
    return InvalidAt(masked_where, "needs \"mask\" and \"value\"");
  }
  Result<std::uint64_t> mask = GetUint(masked.at("mask"), masked_where + ".mask");
  if (!mask.ok()) return mask.error();
  Result<std::uint64_t> value = GetUint(masked.at("value"), masked_where + ".value");
  if (!value.ok()) return value.error();
  if ((*value & ~*mask) != 0) return InvalidAt(masked_where, "value has bits outside the mask");
  add_rule(*mask, *value);
  return OkStatus();
}

}  // namespace

Result<RunFilter> RunFilter::LoadFile(const std::filesystem::path& path) {
  Result<std::string> text = internal::ReadPolicyFile(path);
  if (!text.ok()) return text.error();
  return Parse(*text, path.string());
}

Result<RunFilter> RunFilter::Parse(std::string_view json_text, std::string_view origin) {
  const std::string prefix(origin);
  Result<json> parsed = internal::ParsePolicyJson(json_text);
  if (!parsed.ok()) return parsed.error().WithContext(prefix);
  const json& file = *parsed;
  SANDBOX_RETURN_IF_ERROR(
      CheckObject(file, prefix, {"comment", "format", "default", "deny", "deny_if"}));
  if (!file.contains("format") || file.at("format") != std::string(kFormat)) {
    return InvalidAt(prefix, "\"format\" must be \"" + std::string(kFormat) + "\"");
  }
  if (!file.contains("default") || file.at("default") != "allow") {
    return InvalidAt(prefix,
                     "\"default\" must be \"allow\" (the container profile is the allow-list; "
                     "this filter only takes away)");
  }
  SeccompPolicy policy;
  policy.default_action = SeccompAction::Allow();
  policy.bad_arch_action = SeccompAction{SeccompAction::Kind::kKillProcess, 0};

  std::set<std::string> denied;
  if (file.contains("deny")) {
    const json& deny = file.at("deny");
    if (!deny.is_array()) return InvalidAt(prefix + ": deny", "expected a list");
    for (std::size_t i = 0; i < deny.size(); ++i) {
      const std::string where = prefix + ": deny[" + std::to_string(i) + "]";
      SANDBOX_RETURN_IF_ERROR(CheckObject(deny[i], where, {"comment", "names", "errno"}));
      if (!deny[i].contains("names") || !deny[i].at("names").is_array() ||
          deny[i].at("names").empty()) {
        return InvalidAt(where, "\"names\" must be a non-empty list of syscall names");
      }
      Result<int> error_number = ParseErrno(deny[i], where);
      if (!error_number.ok()) return error_number.error();
      SeccompRule rule{{}, SeccompAction::Errno(*error_number), {}};
      const json& names = deny[i].at("names");
      for (std::size_t j = 0; j < names.size(); ++j) {
        const std::string name_where = where + ".names[" + std::to_string(j) + "]";
        Result<std::string> name = ParseSyscallName(names[j], name_where);
        if (!name.ok()) return name.error();
        if (!denied.insert(*name).second) {
          return InvalidAt(name_where, "\"" + *name + "\" is denied more than once");
        }
        rule.names.push_back(*name);
      }
      policy.rules.push_back(std::move(rule));
    }
  }
  if (file.contains("deny_if")) {
    const json& deny_if = file.at("deny_if");
    if (!deny_if.is_array()) return InvalidAt(prefix + ": deny_if", "expected a list");
    for (std::size_t i = 0; i < deny_if.size(); ++i) {
      const std::string where = prefix + ": deny_if[" + std::to_string(i) + "]";
      std::string name;
      SANDBOX_RETURN_IF_ERROR(ParseDenyIf(deny_if[i], where, policy.rules, name));
      if (denied.count(name) != 0) {
        return InvalidAt(where, "\"" + name +
                                    "\" is already denied unconditionally in \"deny\"; this "
                                    "entry would be dead");
      }
    }
  }
  if (policy.rules.empty()) return InvalidAt(prefix, "denies nothing");
  Result<std::string> bpf = CompileBpf(policy);
  if (!bpf.ok()) return bpf.error().WithContext(prefix);
  return RunFilter(prefix, std::move(policy), std::move(*bpf));
}

}  // namespace sandbox::policy
