#include "sandbox/service/request_resolver.h"

#include <tuple>
#include <utility>

#include "sandbox/runner/result_checks.h"

namespace sandbox::service {
namespace {

Error Invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

// A path for the error text: quoted, cut (a refusal need not echo a megabyte back).
std::string Quoted(std::string_view path) { return "\"" + runner::CutText(path, 80) + "\""; }

}  // namespace

RequestResolver::RequestResolver(const config::Config& config, runner::InputLimits input,
                                 CurrentLimits current_limits)
    : config_(config), input_(input), current_limits_(std::move(current_limits)) {}

Result<const config::PoolConfig*> RequestResolver::FindPool(const std::string& name) const {
  const std::string& wanted = name.empty() ? config_.default_pool : name;
  for (const auto& pc : config_.pools) {
    if (pc.name == wanted) return &pc;
  }
  return Invalid("unknown pool \"" + name + "\"");
}

Result<runner::RunLimits> RequestResolver::Resolve(const std::string& pool,
                                                   const exec::LimitOverrides& o) const {
  auto found = FindPool(pool);
  if (!found.ok()) return found.error();
  const config::PoolConfig& pc = **found;
  const config::Limits defaults = current_limits_ ? current_limits_(pc) : pc.limits;
  runner::RunLimits limits = defaults;
  if (o.timeout_s) {
    if (!(*o.timeout_s > 0) || *o.timeout_s > pc.max_limits.timeout_s) {
      return Invalid("timeout_s: must be above 0 and at most " +
                     std::to_string(static_cast<long long>(pc.max_limits.timeout_s)) + " seconds");
    }
    limits.timeout_s = *o.timeout_s;
    limits.cpu_s = 0;  // derived from the new timeout by the harness
  }
  if (o.memory_bytes) {
    // The container's memory is fixed when it starts; a run may only narrow it.
    if (*o.memory_bytes < (16LL << 20) || *o.memory_bytes > defaults.memory_bytes) {
      return Invalid("memory_bytes: must be between 16 MiB and " +
                     std::to_string(defaults.memory_bytes) + " bytes (the pool's limit)");
    }
    limits.memory_bytes = *o.memory_bytes;
  }
  if (o.output_bytes) {
    if (*o.output_bytes < 1024 || *o.output_bytes > pc.max_limits.output_bytes) {
      return Invalid("output_bytes: must be between 1024 and " +
                     std::to_string(pc.max_limits.output_bytes));
    }
    limits.output_bytes = *o.output_bytes;
  }
  return limits;
}

Result<std::optional<config::NetworkPolicy>> RequestResolver::ResolveNetwork(
    const std::string& pool, const std::optional<exec::NetworkRequest>& request) const {
  if (!request) return std::optional<config::NetworkPolicy>();
  auto found = FindPool(pool);
  if (!found.ok()) return found.error();
  const config::NetworkPolicy& policy = (*found)->network;
  const bool has_network = policy.mode != config::NetworkPolicy::Mode::kNone;
  if (request->off) {
    // Off in a pool without a network is what it already is.
    return has_network ? std::optional<config::NetworkPolicy>(config::NetworkPolicy{})
                       : std::optional<config::NetworkPolicy>();
  }
  if (!has_network) {
    return Invalid("network: pool \"" + (*found)->name +
                   "\" has no network; a request can only narrow its pool's policy");
  }
  config::NetworkPolicy narrower;
  narrower.mode = config::NetworkPolicy::Mode::kAllowlist;
  for (const auto& [entries, rules, name] : {std::tuple{&request->allow, &narrower.allow, "allow"},
                                             std::tuple{&request->deny, &narrower.deny, "deny"}}) {
    for (std::size_t i = 0; i < entries->size(); ++i) {
      auto rule = config::ParseNetworkRule((*entries)[i]);
      if (!rule.ok()) {
        return Invalid("network." + std::string(name) + "[" + std::to_string(i) +
                       "]: " + rule.error().message());
      }
      rules->push_back(std::move(*rule));
    }
  }
  if (narrower.allow.empty()) {
    return Invalid("network.allow: at least one entry (\"none\" turns the network off)");
  }
  if (auto narrows = config::CheckNarrows(policy, narrower); !narrows.ok()) {
    return Invalid("network: " + narrows.error().message());
  }
  return std::optional<config::NetworkPolicy>(config::Narrowed(policy, narrower));
}

Result<runner::RunLimits> RequestResolver::ResolveRun(const exec::RunRequest& request) const {
  // The pool first: an unknown pool is the error worth reporting, whatever the files.
  SANDBOX_RETURN_IF_ERROR(FindPool(request.pool));
  SANDBOX_RETURN_IF_ERROR(CheckFiles(request.files));
  return Resolve(request.pool, request.limits);
}

Status RequestResolver::CheckPath(std::string_view field, std::string_view path,
                                  std::string* normalized) {
  if (auto why = runner::InputPathError(path, normalized); !why.empty()) {
    return Invalid(std::string(field) + ": " + why + ", got " + Quoted(path));
  }
  return OkStatus();
}

Status RequestResolver::CheckFiles(const std::vector<exec::InputFile>& files) const {
  if (files.size() > static_cast<std::size_t>(input_.max_files)) {
    return Invalid("files: " + std::to_string(files.size()) + " files, more than the limit of " +
                   std::to_string(input_.max_files) + " per run");
  }
  std::vector<std::string> seen;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string where = "files[" + std::to_string(i) + "].path";
    std::string path;
    SANDBOX_RETURN_IF_ERROR(CheckPath(where, files[i].path, &path));
    for (const auto& other : seen) {
      if (other == path) return Invalid(where + ": " + Quoted(path) + " is given twice");
      const bool other_shorter = other.size() < path.size();
      const std::string& shorter = other_shorter ? other : path;
      const std::string& longer = other_shorter ? path : other;
      if (longer.compare(0, shorter.size() + 1, shorter + "/") == 0) {
        return Invalid(where + ": " + Quoted(path) + " and " + Quoted(other) +
                       " conflict (one is a directory of the other)");
      }
    }
    seen.push_back(std::move(path));
    total += static_cast<std::int64_t>(files[i].content.size());
  }
  if (total > input_.max_total_bytes) {
    return Invalid("files: " + std::to_string(total) + " bytes in all, more than the limit of " +
                   std::to_string(input_.max_total_bytes));
  }
  return OkStatus();
}

}  // namespace sandbox::service
