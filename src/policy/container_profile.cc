#include "sandbox/policy/container_profile.h"

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

constexpr std::uint64_t kMaxErrno = 4095;

// The architectures libseccomp (and so Docker) knows by these names.
constexpr std::array<std::string_view, 18> kArchitectures = {
    "SCMP_ARCH_X86",     "SCMP_ARCH_X86_64",   "SCMP_ARCH_X32",         "SCMP_ARCH_ARM",
    "SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS",     "SCMP_ARCH_MIPS64",      "SCMP_ARCH_MIPS64N32",
    "SCMP_ARCH_MIPSEL",  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",   "SCMP_ARCH_PPC64LE",  "SCMP_ARCH_S390",        "SCMP_ARCH_S390X",
    "SCMP_ARCH_PARISC",  "SCMP_ARCH_RISCV64",
};

Result<SeccompAction::Kind> ParseActionName(const std::string& name, std::string_view where) {
  static const std::map<std::string, SeccompAction::Kind, std::less<>> kActions = {
      {"SCMP_ACT_ALLOW", SeccompAction::Kind::kAllow},
      {"SCMP_ACT_ERRNO", SeccompAction::Kind::kErrno},
      {"SCMP_ACT_KILL", SeccompAction::Kind::kKillThread},
      {"SCMP_ACT_KILL_THREAD", SeccompAction::Kind::kKillThread},
      {"SCMP_ACT_KILL_PROCESS", SeccompAction::Kind::kKillProcess},
      {"SCMP_ACT_TRAP", SeccompAction::Kind::kTrap},
      {"SCMP_ACT_LOG", SeccompAction::Kind::kLog},
  };
  if (const auto it = kActions.find(name); it != kActions.end()) return it->second;
  return InvalidAt(where, "unknown or unsupported action \"" + name +
                              "\" (supported: SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_KILL, "
                              "SCMP_ACT_KILL_THREAD, SCMP_ACT_KILL_PROCESS, SCMP_ACT_TRAP, "
                              "SCMP_ACT_LOG)");
}

// "origin: key" at the top level (where ends with ':'), "where.key" below it.
std::string Join(std::string_view where, std::string_view key) {
  std::string out(where);
  out += !out.empty() && out.back() == ':' ? " " : ".";
  out += key;
  return out;
}

// Parses `action_key` and the optional errno member of `object` (Docker's rule: errno defaults to
// EPERM).
Result<SeccompAction> ParseAction(const json& object, std::string_view where,
                                  const char* action_key, const char* errno_key) {
  const std::string action_where = Join(where, action_key);
  if (!object.contains(action_key)) return InvalidAt(action_where, "missing");
  Result<std::string> name = GetString(object.at(action_key), action_where);
  if (!name.ok()) return name.error();
  Result<SeccompAction::Kind> kind = ParseActionName(*name, action_where);
  if (!kind.ok()) return kind.error();
  SeccompAction action{*kind, 0};
  if (object.contains(errno_key)) {
    const std::string errno_where = Join(where, errno_key);
    if (action.kind != SeccompAction::Kind::kErrno) {
      return InvalidAt(errno_where, "only meaningful with SCMP_ACT_ERRNO");
    }
    Result<std::uint64_t> value = GetUint(object.at(errno_key), errno_where);
    if (!value.ok()) return value.error();
    if (*value < 1 || *value > kMaxErrno) return InvalidAt(errno_where, "must be 1..4095");
    action.errno_value = static_cast<int>(*value);
  } else if (action.kind == SeccompAction::Kind::kErrno) {
    action.errno_value = 1;  // EPERM, as runc does
  }
  return action;
}

Result<ArgCondition> ParseArg(const json& arg, const std::string& where) {
  SANDBOX_RETURN_IF_ERROR(CheckObject(arg, where, {"index", "value", "valueTwo", "op"}));
  for (const char* key : {"index", "value", "op"}) {
    if (!arg.contains(key)) return InvalidAt(where, std::string("missing \"") + key + "\"");
  }
  static const std::map<std::string, ArgCondition::Op, std::less<>> kOps = {
      {"SCMP_CMP_EQ", ArgCondition::Op::kEq},
      {"SCMP_CMP_NE", ArgCondition::Op::kNe},
      {"SCMP_CMP_LT", ArgCondition::Op::kLt},
      {"SCMP_CMP_LE", ArgCondition::Op::kLe},
      {"SCMP_CMP_GT", ArgCondition::Op::kGt},
      {"SCMP_CMP_GE", ArgCondition::Op::kGe},
      {"SCMP_CMP_MASKED_EQ", ArgCondition::Op::kMaskedEq},
  };
  Result<std::string> op_name = GetString(arg.at("op"), where + ".op");
  if (!op_name.ok()) return op_name.error();
  const auto op = kOps.find(*op_name);
  if (op == kOps.end()) return InvalidAt(where + ".op", "unknown op \"" + *op_name + "\"");
  Result<std::uint64_t> index = GetUint(arg.at("index"), where + ".index");
  if (!index.ok()) return index.error();
  if (*index > 5) return InvalidAt(where + ".index", "syscalls have arguments 0..5");
  Result<std::uint64_t> value = GetUint(arg.at("value"), where + ".value");
  if (!value.ok()) return value.error();
  std::uint64_t value_two = 0;
  if (arg.contains("valueTwo")) {
    Result<std::uint64_t> parsed = GetUint(arg.at("valueTwo"), where + ".valueTwo");
    if (!parsed.ok()) return parsed.error();
    value_two = *parsed;
    if (op->second != ArgCondition::Op::kMaskedEq && value_two != 0) {
      return InvalidAt(where + ".valueTwo", "only meaningful with SCMP_CMP_MASKED_EQ");
    }
  }
  ArgCondition condition;
  condition.index = static_cast<unsigned>(*index);
  condition.op = op->second;
  if (condition.op == ArgCondition::Op::kMaskedEq) {
    // Docker's format: (arg & value) == valueTwo.
    condition.mask = *value;
    condition.value = value_two;
  } else {
    condition.value = *value;
  }
  return condition;
}

Result<SeccompRule> ParseRule(const json& entry, const std::string& where) {
  SANDBOX_RETURN_IF_ERROR(CheckObject(
      entry, where,
      {"names", "action", "errnoRet", "args", "comment", "includes", "excludes", "name"}));
  if (entry.contains("includes") || entry.contains("excludes")) {
    return InvalidAt(where,
                     "\"includes\"/\"excludes\" are not supported: rules must apply to every "
                     "container unconditionally");
  }
  if (entry.contains("name")) {
    return InvalidAt(where, "use \"names\" (a list) instead of the deprecated \"name\"");
  }
  if (!entry.contains("names") || !entry.at("names").is_array() || entry.at("names").empty()) {
    return InvalidAt(where, "\"names\" must be a non-empty list of syscall names");
  }
  SeccompRule rule;
  std::set<std::string> seen;
  const json& names = entry.at("names");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string name_where = where + ".names[" + std::to_string(i) + "]";
    Result<std::string> name = GetString(names[i], name_where);
    if (!name.ok()) return name.error();
    if (Result<int> number = ResolveSyscall(*name); !number.ok()) {
      return InvalidAt(name_where, number.error().message());
    }
    if (!seen.insert(*name).second) return InvalidAt(name_where, "\"" + *name + "\" listed twice");
    rule.names.push_back(*name);
  }
  Result<SeccompAction> action = ParseAction(entry, where, "action", "errnoRet");
  if (!action.ok()) return action.error();
  rule.action = *action;
  if (entry.contains("args")) {
    const json& args = entry.at("args");
    if (!args.is_array()) return InvalidAt(where + ".args", "expected a list");
    std::set<unsigned> indexes;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string arg_where = where + ".args[" + std::to_string(i) + "]";
      Result<ArgCondition> condition = ParseArg(args[i], arg_where);
      if (!condition.ok()) return condition.error();
      if (!indexes.insert(condition->index).second) {
        return InvalidAt(arg_where,
                         "argument " + std::to_string(condition->index) +
                             " is compared twice in one rule; runc would OR the comparisons, "
                             "not AND them: write separate rules");
      }
      rule.conditions.push_back(*condition);
    }
  }
  return rule;
}

Status CheckArchitectures(const json& profile, std::string_view origin) {
  auto check_name = [](const json& value, const std::string& where) -> Status {
    Result<std::string> name = GetString(value, where);
    if (!name.ok()) return name.error();
    for (std::string_view known : kArchitectures) {
      if (*name == known) return OkStatus();
    }
    return InvalidAt(where, "unknown architecture \"" + *name + "\"");
  };
  const std::string prefix(origin);
  if (profile.contains("architectures") && profile.contains("archMap")) {
    return InvalidAt(prefix, "\"architectures\" and \"archMap\" exclude each other");
  }
  if (profile.contains("architectures")) {
    const json& list = profile.at("architectures");
    if (!list.is_array()) return InvalidAt(prefix + ": architectures", "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      SANDBOX_RETURN_IF_ERROR(
          check_name(list[i], prefix + ": architectures[" + std::to_string(i) + "]"));
    }
  }
  if (profile.contains("archMap")) {
    const json& map = profile.at("archMap");
    if (!map.is_array()) return InvalidAt(prefix + ": archMap", "expected a list");
    for (std::size_t i = 0; i < map.size(); ++i) {
      const std::string where = prefix + ": archMap[" + std::to_string(i) + "]";
      SANDBOX_RETURN_IF_ERROR(
          CheckObject(map[i], where, {"architecture", "subArchitectures", "comment"}));
      if (!map[i].contains("architecture")) return InvalidAt(where, "missing \"architecture\"");
      SANDBOX_RETURN_IF_ERROR(check_name(map[i].at("architecture"), where + ".architecture"));
      if (map[i].contains("subArchitectures") && !map[i].at("subArchitectures").is_null()) {
        const json& subs = map[i].at("subArchitectures");
        if (!subs.is_array()) return InvalidAt(where + ".subArchitectures", "expected a list");
        for (std::size_t j = 0; j < subs.size(); ++j) {
          SANDBOX_RETURN_IF_ERROR(
              check_name(subs[j], where + ".subArchitectures[" + std::to_string(j) + "]"));
        }
      }
    }
  }
  return OkStatus();
}

// A syscall in an unconditional rule must appear in no other rule.
Status CheckOverlaps(const std::vector<SeccompRule>& rules, std::string_view origin) {
  std::map<std::string, std::vector<std::size_t>> rules_of;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    for (const std::string& name : rules[i].names) rules_of[name].push_back(i);
  }
  for (const auto& [name, indexes] : rules_of) {
    if (indexes.size() < 2) continue;
    for (std::size_t i : indexes) {
      if (!rules[i].conditions.empty()) continue;
      const std::size_t other = indexes[0] == i ? indexes[1] : indexes[0];
      return InvalidAt(std::string(origin) + ": syscalls[" + std::to_string(i) + "]",
                       "\"" + name + "\" is listed unconditionally here and again in syscalls[" +
                           std::to_string(other) + "]; one of the two rules would be dead");
    }
  }
  return OkStatus();
}

}  // namespace

Result<ContainerProfile> ContainerProfile::LoadFile(const std::filesystem::path& path) {
  Result<std::string> text = internal::ReadPolicyFile(path);
  if (!text.ok()) return text.error();
  return Parse(*text, path.string());
}

Result<ContainerProfile> ContainerProfile::Parse(std::string_view json_text,
                                                 std::string_view origin) {
  const std::string prefix(origin);
  Result<json> parsed = internal::ParsePolicyJson(json_text);
  if (!parsed.ok()) return parsed.error().WithContext(prefix);
  json& profile = *parsed;
  SANDBOX_RETURN_IF_ERROR(CheckObject(
      profile, prefix,
      {"comment", "defaultAction", "defaultErrnoRet", "architectures", "archMap", "syscalls"}));
  SeccompPolicy policy;
  Result<SeccompAction> default_action =
      ParseAction(profile, prefix + ":", "defaultAction", "defaultErrnoRet");
  if (!default_action.ok()) return default_action.error();
  policy.default_action = *default_action;
  SANDBOX_RETURN_IF_ERROR(CheckArchitectures(profile, origin));
  if (!profile.contains("syscalls") || !profile.at("syscalls").is_array() ||
      profile.at("syscalls").empty()) {
    return InvalidAt(prefix, "\"syscalls\" must be a non-empty list of rules");
  }
  const json& syscalls = profile.at("syscalls");
  for (std::size_t i = 0; i < syscalls.size(); ++i) {
    Result<SeccompRule> rule =
        ParseRule(syscalls[i], prefix + ": syscalls[" + std::to_string(i) + "]");
    if (!rule.ok()) return rule.error();
    policy.rules.push_back(std::move(*rule));
  }
  SANDBOX_RETURN_IF_ERROR(CheckOverlaps(policy.rules, origin));
  internal::StripComments(profile);
  return ContainerProfile(prefix, profile.dump(), std::move(policy));
}

Result<std::string> ContainerProfile::CompileBpf() const {
  Result<std::string> bpf = policy::CompileBpf(policy_);
  if (!bpf.ok()) return bpf.error().WithContext(origin_);
  return bpf;
}

}  // namespace sandbox::policy
