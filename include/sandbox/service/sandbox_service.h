// SandboxService: the execution engine behind the protocol layers. It owns one warm pool per
// configured pool (sandbox_pools.h builds them), validates requests against the pool's limits
// (request_resolver.h), lends a sandbox for each run and gives it back (or retires it)
// afterwards.
// Also: crash recovery (RemoveLeftovers) and sandbox_info data. It reaches the container
// engine only through engine::ContainerEngine (and the runner's sandboxes on it).
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
#include "sandbox/engine/container_engine.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/pool/warm_pool.h"
#include "sandbox/runner/sandbox.h"
#include "sandbox/service/engine_control.h"
#include "sandbox/service/owner.h"
#include "sandbox/service/placing_maker.h"
#include "sandbox/service/request_resolver.h"
#include "sandbox/service/sandbox_pools.h"
#include "sandbox/service/tunable_pools.h"

namespace sandbox::service {

// Removes EVERY container of an instance id (labels io.sandbox-mcp.managed=true and
// io.sandbox-mcp.instance=<instance_id>), live owner or not. Only for a caller that is the
// instance id's sole user (tests with their unique ids); a server uses SweepLeftovers.
// Returns how many.
Result<int> RemoveLeftovers(const engine::ContainerEngine& engine, const std::string& instance_id,
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
  std::vector<engine::Listed> left_sessions;
};

// Crash recovery at start-up: removes the containers of the instance whose owner is provably
// gone (owner.h, DecideOwner) and leaves every other one alone: a live server with the same
// instance id keeps its sandboxes and sessions.
Result<SweepCounts> SweepLeftovers(const engine::ContainerEngine& engine,
                                   const SweepOptions& options, const OwnerProbe& probe,
                                   const std::shared_ptr<spdlog::logger>& logger);

// The longest a live server keeps one container: a pool's max_age plus its longest run (and
// the run grace and a start), or a session's max_lifetime, plus a margin. An unlabelled
// container older than this cannot be a live server's.
std::chrono::seconds LeftoverMaxLife(const config::Config& config);

// An engine left out of a pool at start-up, and why (its image is missing there, or it was not
// reachable when the server started).
struct EngineExclusion {
  std::string pool;
  std::string engine;
  std::string why;  // what was wrong and the command that fixes it
};

class SandboxService final : public exec::ExecutionService,
                             public TunablePools,
                             public EngineControl {
 public:
  // Checks every pool's image on each engine of the pool (pools[].engines; `engines` are the
  // ones connected). An engine that lacks it, or is not among `engines`, is left out of that
  // pool (logged, excluded()); a pool left with no engine is an error naming the image, as is
  // any missing image on a server of one engine. Starts no pool; starts the watch thread of
  // runs waiting for their `started` (see Run). The engines must outlive the service.
  static Result<std::unique_ptr<SandboxService>> Create(const config::Config& config,
                                                        const engine::EngineList& engines,
                                                        ServiceOptions options,
                                                        std::shared_ptr<spdlog::logger> logger);
  // A server of one engine.
  static Result<std::unique_ptr<SandboxService>> Create(const config::Config& config,
                                                        const engine::ContainerEngine& engine,
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

  // The rules requests are checked by, with each pool's default limits as they are now.
  const RequestResolver& resolver() const { return resolver_; }
  // The makers of pools over the same engines as this service's (the session pools').
  MakerFactory makers() const {
    return PlacingMakersOn(placeable_, engines_, options_.health, logger_, options_.egress);
  }
  // An engine went down or came back (EngineHealth's listener). Down: the idle sandboxes on it
  // are retired without a call to it (their containers are left to the sweep when it is back),
  // and every run in flight there is cancelled and ends `internal` naming the engine (one that
  // had delivered nothing runs again on another engine). Back: this instance's containers on it
  // are removed first; false when that failed (it stays out of placements).
  bool EngineChanged(const engine::ContainerEngine& engine, bool up, const std::string& why);
  // The engines the service runs on, and those left out of a pool at start-up.
  const engine::EngineList& engines() const { return engines_; }
  const std::vector<EngineExclusion>& excluded() const { return excluded_; }

  std::vector<std::pair<std::string, pool::PoolStats>> PoolStats() const;

  // TunablePools: the one-shot pools' live settings (session pools are not tunable).
  std::vector<std::string> PoolNames() const override;
  std::optional<PoolSettings> Settings(const std::string& pool) const override;
  std::optional<pool::PoolStats> Stats(const std::string& pool) const override;
  bool Apply(const std::string& pool, const PoolSettings& settings) override;
  std::optional<pool::DrainProgress> Drain(const std::string& pool) override;

  // The pools none of whose engines takes new sandboxes now (down or draining), each with why;
  // empty on a server of one engine. /readyz is not ready while any is.
  std::vector<std::pair<std::string, std::string>> PoolsWithoutEngine() const;

  // EngineControl.
  nlohmann::json Engines() const override;
  Result<nlohmann::json> DrainEngine(const std::string& name, bool drain) override;

  static constexpr std::chrono::milliseconds kStartCheckAfter{2000};

 private:
  // The pool's network policy now (live changes included).
  config::NetworkPolicy NetworkOf(const config::PoolConfig& pool) const;
  class StartWatch;

  SandboxService(const config::Config& config, engine::EngineList engines, ServiceOptions options,
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
  Loss ExplainLoss(const runner::Sandbox& sandbox) const;
  // A lease for a run; on a retry (`verify`) only a sandbox that answers a ping, trying at
  // most the pool's max_total + 1 sandboxes.
  Result<SandboxLease> AcquireFor(const PoolEntry& entry, const std::string& principal,
                                  bool verify) const;
  // The pool's engines for sandbox_info: placed or excluded (why), and its sandboxes on each.
  nlohmann::json PoolEnginesJson(const config::PoolConfig& pc, const PoolEntry& entry) const;
  // The Python version and installed distributions of `image`, by a run in `pool`.
  Result<nlohmann::json> ProbePackages(const std::string& pool, const std::string& image);
  // A pool's kBusy becomes kUnavailable, naming the engines, when none of the pool's answers.
  Error WithEngineState(const PoolEntry& entry, const Error& error) const;
  // "the Docker engine" (one engine) or "the Docker engine e2" (several): for messages.
  std::string EngineWords(const engine::ContainerEngine& engine) const;

  const config::Config& config_;
  const engine::EngineList engines_;
  PlaceableEngines placeable_;  // set by Create, before the pools are built
  std::vector<EngineExclusion> excluded_;
  ServiceOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  PoolSet pools_;
  RequestResolver resolver_;
  std::mutex info_mu_;
  // Each image's probe answer ({python, packages}), cached after its first success.
  std::map<std::string, nlohmann::json> packages_;
  std::unique_ptr<StartWatch> watch_;  // last: its thread stops first
};

}  // namespace sandbox::service
