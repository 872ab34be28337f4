#include "sandbox/service/sandbox_service.h"

#include <string>

#include "sandbox/core/json.h"
#include "sandbox/runner/sandbox_spec.h"

namespace sandbox::service {
namespace {

using nlohmann::json;

Error Invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

Status CheckPath(const std::string& path, std::size_t index) {
  const std::string where = "files[" + std::to_string(index) + "].path";
  if (path.empty()) return Invalid(where + ": must not be empty");
  if (path.size() > 1024) return Invalid(where + ": longer than 1024 bytes");
  if (path.front() == '/') return Invalid(where + ": must be relative, got \"" + path + "\"");
  if (path.find('\0') != std::string::npos) return Invalid(where + ": contains a NUL byte");
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (path.compare(start, end - start, "..") == 0) {
      return Invalid(where + ": must not contain \"..\", got \"" + path + "\"");
    }
    start = end + 1;
  }
  return OkStatus();
}

// Prints the interpreter's version and installed distributions as one JSON line.
constexpr const char* kInfoScript = R"PY(
import json, sys, platform
try:
    from importlib import metadata
    pkgs = sorted({(d.metadata["Name"] or "?"): d.version for d in metadata.distributions()}.items())
except Exception as e:
    pkgs = [["error", str(e)]]
print(json.dumps({"python": platform.python_version(), "implementation": platform.python_implementation(),
                  "packages": [{"name": n, "version": v} for n, v in pkgs]}))
)PY";

class NullObserver final : public exec::RunObserver {};

}  // namespace

HarnessSandboxFactory::HarnessSandboxFactory(const docker::Client& client,
                                             runner::SandboxSetup setup,
                                             std::shared_ptr<spdlog::logger> logger)
    : client_(client), setup_(std::move(setup)), logger_(std::move(logger)) {
  const auto& pool = setup_.pool;
  if (pool.skip_preload_when_queued && !setup_.session &&
      (!pool.preload.empty() || pool.warm_plot)) {
    lean_setup_ = setup_;
    lean_setup_->pool.preload.clear();
    lean_setup_->pool.warm_plot = false;
  }
}

Result<std::unique_ptr<pool::PooledSandbox>> HarnessSandboxFactory::Create() {
  return CreateFor(pool::StartContext{});
}

Result<std::unique_ptr<pool::PooledSandbox>> HarnessSandboxFactory::CreateFor(
    const pool::StartContext& context) {
  const bool lean = context.behind_demand && lean_setup_.has_value();
  if (lean) {
    logger_->debug("pool '{}': behind demand; starting a container without the preload",
                   setup_.pool.name);
  }
  auto sandbox = runner::HarnessSandbox::Start(client_, lean ? *lean_setup_ : setup_, logger_,
                                               &cancel_starts_);
  if (!sandbox.ok()) return sandbox.error();
  return std::unique_ptr<pool::PooledSandbox>(std::move(*sandbox));
}

Result<int> RemoveLeftovers(const docker::Client& client, const std::string& instance_id,
                            const std::shared_ptr<spdlog::logger>& logger) {
  docker::ListOptions list;
  list.all = true;
  list.filters = {{"label",
                   {std::string(runner::kManagedLabel) + "=true",
                    std::string(runner::kInstanceLabel) + "=" + instance_id}}};
  auto containers = client.ListContainers(list);
  if (!containers.ok()) return containers.error().WithContext("list leftover containers");
  int removed = 0;
  for (const auto& c : *containers) {
    docker::RemoveOptions rm;
    rm.force = true;
    rm.volumes = true;
    auto status = client.RemoveContainer(c.id, rm);
    if (status.ok() || status.error().code() == ErrorCode::kNotFound) {
      ++removed;
    } else if (logger) {
      logger->warn("could not remove leftover container {}: {}", c.id.substr(0, 12),
                   status.error().ToString());
    }
  }
  if (removed > 0 && logger) {
    logger->info("removed {} container(s) left by an earlier run of instance \"{}\"", removed,
                 instance_id);
  }
  return removed;
}

SandboxService::SandboxService(const config::Config& config, ServiceOptions options,
                               std::shared_ptr<spdlog::logger> logger)
    : config_(config), options_(std::move(options)), logger_(std::move(logger)) {}

Result<std::unique_ptr<SandboxService>> SandboxService::Create(
    const config::Config& config, const docker::Client& client, ServiceOptions options,
    std::shared_ptr<spdlog::logger> logger) {
  std::unique_ptr<SandboxService> service(
      new SandboxService(config, std::move(options), std::move(logger)));
  for (const auto& pc : config.pools) {
    auto image = client.InspectImage(pc.image);
    if (!image.ok()) {
      return image.error().WithContext("pool \"" + pc.name + "\" uses image \"" + pc.image +
                                       "\" (build it with images/build.sh)");
    }
    runner::SandboxSetup setup;
    setup.pool = pc;
    setup.output = config.output;
    setup.container_seccomp_json = service->options_.container_seccomp_json;
    setup.run_filter_bpf = service->options_.run_filter_bpf;
    setup.instance_id = config.instance_id;
    PoolEntry entry;
    entry.config = &pc;
    entry.factory =
        std::make_unique<HarnessSandboxFactory>(client, std::move(setup), service->logger_);
    entry.pool = std::make_unique<pool::WarmPool>(pool::PoolOptionsFromConfig(pc), *entry.factory,
                                                  service->logger_);
    service->pools_.emplace(pc.name, std::move(entry));
  }
  return service;
}

SandboxService::~SandboxService() { Shutdown(); }

void SandboxService::Start() {
  for (auto& [name, entry] : pools_) entry.pool->Start();
}

void SandboxService::Shutdown() {
  for (auto& [name, entry] : pools_) entry.pool->Shutdown();
}

const SandboxService::PoolEntry* SandboxService::FindPool(const std::string& name) const {
  auto it = pools_.find(name.empty() ? config_.default_pool : name);
  return it == pools_.end() ? nullptr : &it->second;
}

Result<runner::RunLimits> SandboxService::ResolveRequest(const exec::RunRequest& request) const {
  const PoolEntry* entry = FindPool(request.pool);
  if (entry == nullptr) return Invalid("unknown pool \"" + request.pool + "\"");
  const auto& pc = *entry->config;
  if (request.files.size() > static_cast<std::size_t>(options_.max_input_files)) {
    return Invalid("files: at most " + std::to_string(options_.max_input_files) + " files per run");
  }
  std::int64_t total = 0;
  for (std::size_t i = 0; i < request.files.size(); ++i) {
    SANDBOX_RETURN_IF_ERROR(CheckPath(request.files[i].path, i));
    total += static_cast<std::int64_t>(request.files[i].content.size());
  }
  if (total > options_.max_input_bytes) {
    return Invalid("files: " + std::to_string(total) + " bytes in all, more than the limit of " +
                   std::to_string(options_.max_input_bytes));
  }
  runner::RunLimits limits = runner::ResolveLimits(pc.limits);
  const auto& o = request.limits;
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
    if (*o.memory_bytes < (16LL << 20) || *o.memory_bytes > pc.limits.memory_bytes) {
      return Invalid("memory_bytes: must be between 16 MiB and " +
                     std::to_string(pc.limits.memory_bytes) + " bytes (the pool's limit)");
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

Result<exec::RunResult> SandboxService::Run(const exec::RunRequest& request,
                                            exec::RunObserver& observer,
                                            const exec::CancelToken& cancel) {
  auto limits = ResolveRequest(request);
  if (!limits.ok()) return limits.error();
  const PoolEntry* entry = FindPool(request.pool);
  auto lease = entry->pool->Acquire(std::nullopt, request.principal);
  if (!lease.ok()) return lease.error();
  // The factory only makes HarnessSandboxes.
  auto* sandbox = static_cast<runner::HarnessSandbox*>(lease->get());
  auto result = sandbox->Run(request.code, request.files, *limits, observer, cancel);
  if (!sandbox->Reusable()) lease->Discard();
  return result;
}

Result<exec::ServiceInfo> SandboxService::Info() {
  exec::ServiceInfo info;
  json pools = json::array();
  for (const auto& [name, entry] : pools_) {
    const auto& pc = *entry.config;
    auto stats = entry.pool->stats();
    auto limits_json = [](const config::Limits& l) {
      return json{{"timeout_s", l.timeout_s},
                  {"memory_bytes", l.memory_bytes},
                  {"cpus", l.cpus},
                  {"pids", l.pids},
                  {"nproc", l.nproc},
                  {"nofile", l.nofile},
                  {"fsize_bytes", l.fsize_bytes},
                  {"tmpfs_bytes", l.tmpfs_bytes},
                  {"output_bytes", l.output_bytes}};
    };
    pools.push_back({{"name", name},
                     {"mode", std::string(config::PoolModeName(pc.mode))},
                     {"image", pc.image},
                     {"runtime", pc.runtime.empty() ? "runc" : pc.runtime},
                     {"limits", limits_json(pc.limits)},
                     {"max_limits", limits_json(pc.max_limits)},
                     {"idle", stats.idle},
                     {"leased", stats.leased},
                     {"starting", stats.starting},
                     {"max_total", pc.max_total}});
  }
  info.info["pools"] = pools;
  info.info["default_pool"] = config_.default_pool;
  info.info["network"] = "none";
  {
    std::lock_guard lock(info_mu_);
    if (packages_) {
      info.info["python"] = (*packages_)["python"];
      info.info["packages"] = (*packages_)["packages"];
      return info;
    }
  }
  exec::RunRequest probe;
  probe.code = kInfoScript;
  NullObserver observer;
  exec::CancelToken cancel;
  auto result = Run(probe, observer, cancel);
  if (!result.ok()) return result.error().WithContext("sandbox_info");
  if (result->verdict != exec::Verdict::kOk) {
    return Error(ErrorCode::kInternal,
                 "sandbox_info probe failed: " + result->detail + result->stderr_text);
  }
  auto probe_json = ParseJson(result->stdout_text);
  if (!probe_json.ok() || !probe_json->is_object())
    return Error(ErrorCode::kInternal, "sandbox_info probe printed no JSON object");
  json parsed = std::move(probe_json).value();
  std::lock_guard lock(info_mu_);
  packages_ = parsed;
  info.info["python"] = parsed["python"];
  info.info["packages"] = parsed["packages"];
  return info;
}

std::vector<std::pair<std::string, pool::PoolStats>> SandboxService::PoolStats() const {
  std::vector<std::pair<std::string, pool::PoolStats>> out;
  for (const auto& [name, entry] : pools_) out.emplace_back(name, entry.pool->stats());
  return out;
}

}  // namespace sandbox::service
