// SandboxService: the execution engine behind the protocol layers. It owns one warm pool per
// configured pool, each filled by a factory of HarnessSandboxes, validates requests against the
// pool's limits, lends a sandbox for each run and gives it back (or retires it) afterwards.
// Also: crash recovery (RemoveLeftovers) and sandbox_info data.
//
// Thread-safety: Run() and Info() may be called from many threads at once.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <functional>
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
#include "sandbox/service/owner.h"
#include "sandbox/service/tunable_pools.h"

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
  // A session container for `session_id`, started now rather than taken from a pool: a
  // container labelled with another session's key could not be adopted for this one after a
  // restart (labels are fixed at creation). For session setups with a watchdog.
  Result<std::unique_ptr<runner::HarnessSandbox>> StartForSession(const std::string& session_id);
  // Starts in flight give up (their containers are removed); later ones fail at once.
  void CancelStarts() override { cancel_starts_.store(true); }
  // The setup containers start from now (adopted session containers are driven by it). Never
  // freed, so the reference stays valid when the limits change.
  const runner::SandboxSetup& setup() const;
  // The pool's default run limits now; containers started from here on are built with them.
  config::Limits limits() const;
  void SetLimits(const config::Limits& limits);
  // "major.minor" of the interpreter, as the last sandbox that became ready reported it; ""
  // until one has.
  std::string python_version() const;

 private:
  // The setups to start from: full and (when the pool may start lean) without preload and warm
  // plot. A sandbox refers to the setup it was started from for its whole life, so a limits
  // change adds a new pair and never frees an old one (changes are rare and a setup small).
  struct Setups {
    const runner::SandboxSetup* full = nullptr;
    const runner::SandboxSetup* lean = nullptr;  // null: never lean
  };
  Setups AddSetups(runner::SandboxSetup setup);  // setups_mu_ held

  const docker::Client& client_;
  std::shared_ptr<spdlog::logger> logger_;
  mutable std::mutex setups_mu_;
  std::vector<std::unique_ptr<const runner::SandboxSetup>> all_setups_;
  Setups current_;
  std::atomic<bool> cancel_starts_{false};
  mutable std::mutex version_mu_;
  std::string python_version_;
};

struct ServiceOptions {
  std::string container_seccomp_json;  // policy::ContainerProfile::compact_json()
  std::string run_filter_bpf;          // policy::RunFilter::bpf()
  // Most files a request may send, and their total decoded size (also the harness's bound).
  runner::InputLimits input;
  // Labels every container of this server carries besides the project's own: main sets the
  // owner label (owner.h), so the next server's sweep can tell whether this one still runs.
  std::map<std::string, std::string> container_labels;
  // The metrics observers of each pool, by the pool's name (session pools are "<pool>/sessions");
  // empty: none.
  std::function<pool::PoolHooks(const std::string& pool_name)> pool_hooks;
};

// Removes EVERY container of an instance id (labels io.sandbox-mcp.managed=true and
// io.sandbox-mcp.instance=<instance_id>), live owner or not. Only for a caller that is the
// instance id's sole user (tests with their unique ids); a server uses SweepLeftovers.
// Returns how many.
Result<int> RemoveLeftovers(const docker::Client& client, const std::string& instance_id,
                            const std::shared_ptr<spdlog::logger>& logger);

struct SweepOptions {
  std::string instance_id;
  Owner self;                // this server (DetectOwner)
  bool engine_local = true;  // the engine is reached over a Unix socket (DecideOwner)
  // Containers without the owner label (older versions) older than this are swept; see
  // SweepUnlabelled and LeftoverMaxLife.
  std::chrono::seconds unlabelled_max_life{std::chrono::hours(24)};
  // sessions.restart_grace_s > 0 (and sessions on): a gone owner's running session containers
  // with a session key are not removed but returned for adoption (SessionManager::Adopt).
  bool keep_sessions = false;
};

struct SweepCounts {
  int removed = 0;  // leftovers of gone owners (and old unlabelled ones)
  int kept = 0;     // containers of live or undecidable owners, left alone
  // Session containers of gone owners kept for adoption (SweepOptions::keep_sessions).
  std::vector<docker::ContainerSummary> left_sessions;
};

// Crash recovery at start-up: removes the containers of the instance whose owner is provably
// gone (owner.h, DecideOwner) and leaves every other one alone: a live server with the same
// instance id keeps its sandboxes and sessions.
Result<SweepCounts> SweepLeftovers(const docker::Client& client, const SweepOptions& options,
                                   const OwnerProbe& probe,
                                   const std::shared_ptr<spdlog::logger>& logger);

// The longest a live server keeps one container: a pool's max_age plus its longest run (and
// the run grace and a start), or a session's max_lifetime, plus a margin. An unlabelled
// container older than this cannot be a live server's.
std::chrono::seconds LeftoverMaxLife(const config::Config& config);

class SandboxService final : public exec::ExecutionService, public TunablePools {
 public:
  // Checks that every pool's image exists (a clear error naming it otherwise). Starts no pool;
  // starts the watch thread of runs waiting for their `started` (see Run).
  static Result<std::unique_ptr<SandboxService>> Create(const config::Config& config,
                                                        const docker::Client& client,
                                                        ServiceOptions options,
                                                        std::shared_ptr<spdlog::logger> logger);
  ~SandboxService() override;

  // Starts every pool's threads; they fill to min_idle in the background.
  void Start();
  // Stops the pools and destroys their idle sandboxes. Idempotent.
  void Shutdown();

  // A run whose lent sandbox turns out gone before its code started (the container was
  // killed, removed or paused from outside while idle: the run ends kInternal before the
  // harness's `started`, and the engine confirms the container is not running) is run again,
  // once, on another sandbox that answers a ping: the user sees no failure. A run whose
  // `started` has not come within kStartCheckAfter has its container inspected (and again at
  // that period): one found paused or gone is treated the same way, rather than waiting for
  // the run's deadline. A sandbox lost after `started` ends the run kInternal, its detail
  // saying what the engine knows of the container.
  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;
  Result<exec::ServiceInfo> Info() override;
  Result<std::string> PoolForExecutable(const std::string& path) override;
  // Every interpreter path the pool answers to, in the order they are matched: its `python`
  // and `executables`, the default pool's Snekbox and python-image paths, then the versioned
  // Snekbox path once the version is known; each with its python/python3 sibling.
  std::vector<std::string> ExecutablesOf(const std::string& pool) const;

  // Validates a request against its pool and returns the resolved limits (no side effects).
  Result<runner::RunLimits> ResolveRequest(const exec::RunRequest& request) const;

  std::vector<std::pair<std::string, pool::PoolStats>> PoolStats() const;

  // TunablePools: the one-shot pools' live settings (session pools are not tunable).
  std::vector<std::string> PoolNames() const override;
  std::optional<PoolSettings> Settings(const std::string& pool) const override;
  std::optional<pool::PoolStats> Stats(const std::string& pool) const override;
  bool Apply(const std::string& pool, const PoolSettings& settings) override;
  std::optional<pool::DrainProgress> Drain(const std::string& pool) override;

  static constexpr std::chrono::milliseconds kStartCheckAfter{2000};

 private:
  class StartWatch;
  struct PoolEntry {
    const config::PoolConfig* config = nullptr;
    std::unique_ptr<HarnessSandboxFactory> factory;
    std::unique_ptr<pool::WarmPool> pool;
  };

  SandboxService(const config::Config& config, const docker::Client& client, ServiceOptions options,
                 std::shared_ptr<spdlog::logger> logger);
  const PoolEntry* FindPool(const std::string& name) const;
  std::vector<std::string> DeclaredExecutables(const PoolEntry& entry) const;
  std::vector<std::string> LearnedExecutables(const PoolEntry& entry) const;

  // What the engine says about a sandbox whose run ended kInternal: whether its container is
  // gone (killed, removed or paused from outside), and a sentence for the verdict's detail.
  struct Loss {
    bool gone = false;
    std::string why;
  };
  Loss ExplainLoss(const runner::HarnessSandbox& sandbox) const;
  // A lease for a run; on a retry (`verify`) only a sandbox that answers a ping, trying at
  // most the pool's max_total + 1 sandboxes.
  Result<pool::Lease> AcquireFor(const PoolEntry& entry, const std::string& principal,
                                 bool verify) const;
  // The Python version and installed distributions of `image`, by a run in `pool`.
  Result<nlohmann::json> ProbePackages(const std::string& pool, const std::string& image);
  // A pool's kBusy becomes kUnavailable, naming the engine, when the engine does not answer.
  Error WithEngineState(const Error& error) const;

  const config::Config& config_;
  const docker::Client& client_;
  ServiceOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::map<std::string, PoolEntry> pools_;
  std::mutex info_mu_;
  // Each image's probe answer ({python, packages}), cached after its first success.
  std::map<std::string, nlohmann::json> packages_;
  std::unique_ptr<StartWatch> watch_;  // last: its thread stops first
};

}  // namespace sandbox::service
