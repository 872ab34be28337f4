// SandboxService: the execution engine behind the protocol layers. It owns one warm pool per
// configured pool, each filled by a factory of HarnessSandboxes, validates requests against the
// pool's limits, lends a sandbox for each run and gives it back (or retires it) afterwards.
// Also: crash recovery (RemoveLeftovers) and sandbox_info data.
//
// Thread-safety: Run() and Info() may be called from many threads at once.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/docker/client.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/pool/warm_pool.h"
#include "sandbox/runner/harness_sandbox.h"

namespace sandbox::service {

// Makes HarnessSandboxes of one pool.
class HarnessSandboxFactory final : public pool::SandboxFactory {
 public:
  HarnessSandboxFactory(const docker::Client& client, runner::SandboxSetup setup,
                        std::shared_ptr<spdlog::logger> logger);
  Result<std::unique_ptr<pool::PooledSandbox>> Create() override;
  // Starts without the preload while requests wait (pool.skip_preload_when_queued).
  Result<std::unique_ptr<pool::PooledSandbox>> CreateFor(
      const pool::StartContext& context) override;
  // Starts in flight give up (their containers are removed); later ones fail at once.
  void CancelStarts() override { cancel_starts_.store(true); }
  const runner::SandboxSetup& setup() const { return setup_; }

 private:
  const docker::Client& client_;
  const runner::SandboxSetup setup_;
  // setup_ without preload and warm plot; set when the pool may start lean.
  std::optional<runner::SandboxSetup> lean_setup_;
  std::shared_ptr<spdlog::logger> logger_;
  std::atomic<bool> cancel_starts_{false};
};

struct ServiceOptions {
  std::string container_seccomp_json;  // policy::ContainerProfile::compact_json()
  std::string run_filter_bpf;          // policy::RunFilter::bpf()
  // Most files a request may send, and their total decoded size.
  int max_input_files = 64;
  std::int64_t max_input_bytes = 32LL << 20;
};

// Removes every container of this server instance left by an earlier process (labels
// io.sandbox-mcp.managed=true and io.sandbox-mcp.instance=<instance_id>). Returns how many.
Result<int> RemoveLeftovers(const docker::Client& client, const std::string& instance_id,
                            const std::shared_ptr<spdlog::logger>& logger);

class SandboxService final : public exec::ExecutionService {
 public:
  // Checks that every pool's image exists (a clear error naming it otherwise). Starts nothing.
  static Result<std::unique_ptr<SandboxService>> Create(const config::Config& config,
                                                        const docker::Client& client,
                                                        ServiceOptions options,
                                                        std::shared_ptr<spdlog::logger> logger);
  ~SandboxService() override;

  // Starts every pool's threads; they fill to min_idle in the background.
  void Start();
  // Stops the pools and destroys their idle sandboxes. Idempotent.
  void Shutdown();

  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;
  Result<exec::ServiceInfo> Info() override;

  // Validates a request against its pool and returns the resolved limits (no side effects).
  Result<runner::RunLimits> ResolveRequest(const exec::RunRequest& request) const;

  std::vector<std::pair<std::string, pool::PoolStats>> PoolStats() const;

 private:
  struct PoolEntry {
    const config::PoolConfig* config = nullptr;
    std::unique_ptr<HarnessSandboxFactory> factory;
    std::unique_ptr<pool::WarmPool> pool;
  };

  SandboxService(const config::Config& config, ServiceOptions options,
                 std::shared_ptr<spdlog::logger> logger);
  const PoolEntry* FindPool(const std::string& name) const;

  const config::Config& config_;
  ServiceOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::map<std::string, PoolEntry> pools_;
  std::mutex info_mu_;
  std::optional<nlohmann::json> packages_;  // cached after the first successful Info()
};

}  // namespace sandbox::service
