// The engine's pools, built in one place: for every configured pool, a maker of sandboxes (the
// setup its containers start from) and a warm pool of them, either for one-shot runs
// (SandboxService) or for sessions (SessionManager). BuildPools is the only code that turns
// the configuration into SandboxSetups and PoolOptions; the makers come from a MakerFactory,
// so tests build the same pools over fake sandboxes (tests/support/fake_sandbox.h).
//
// Thread-safety: a SandboxMaker's methods may be called from any thread; BuildPools is a pure
// function of its arguments.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/engine/engine_health.h"
#include "sandbox/pool/warm_pool.h"
#include "sandbox/runner/harness_sandbox.h"
#include "sandbox/runner/sandbox.h"

namespace sandbox::service {

class EgressGateways;

using SandboxPool = pool::WarmPool<runner::Sandbox>;
using SandboxLease = pool::Lease<runner::Sandbox>;

// One engine of a pool that runs on several, as its maker sees it (sandbox_info, tests).
struct EnginePlacement {
  std::string engine;
  int alive = 0;     // sandboxes made (or adopted) there and not yet destroyed
  int starting = 0;  // starts in flight there
  int failures_in_row = 0;
  bool backing_off = false;
  std::string last_error;  // of its last failed start; "" after a success
};

// Makes the sandboxes of one pool: the warm ones its pool keeps (pool::SandboxFactory), and
// the ones a session needs outside the pool.
class SandboxMaker : public pool::SandboxFactory<runner::Sandbox> {
 public:
  // A session sandbox for `session_id`, started now rather than taken from a pool: a
  // container labelled with another session's key could not be adopted for this one after a
  // restart (labels are fixed at creation). For session setups with a watchdog.
  virtual Result<std::unique_ptr<runner::Sandbox>> StartForSession(
      const std::string& session_id) = 0;
  // Takes over a running session container an earlier server left (on the engine that listed
  // it): owned from here on (it is removed when the sandbox is destroyed, also when this fails).
  virtual Result<std::unique_ptr<runner::Sandbox>> Adopt(const engine::Listed& container) = 0;
  // Removes a container this maker will not adopt.
  virtual void Remove(const engine::Listed& container) = 0;
  // The pool's default run limits now; sandboxes started from here on are built with them.
  virtual config::Limits limits() const = 0;
  virtual void SetLimits(const config::Limits& limits) = 0;
  // "major.minor" of the interpreter, as the last sandbox that became ready reported it; ""
  // until one has.
  virtual std::string python_version() const = 0;
  // Where the pool's sandboxes are, engine by engine; empty when it runs on one engine.
  virtual std::vector<EnginePlacement> placements() const { return {}; }
};

// What the pools are for: they differ in the harness's mode, the pool's sizes and its mode.
enum class PoolPurpose { kRuns, kSessions };

// What every container of this server gets besides its pool's configuration.
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
  // Which engines take new sandboxes (several engines only; null: all of them, always); the
  // admin API drains engines through it.
  engine::EngineHealth* health = nullptr;
  // The egress gateways of pools with a network policy (null: such pools cannot start).
  EgressGateways* egress = nullptr;
};

// One configured pool as the engine holds it. The maker outlives the pool (declared first, so
// destroyed last): the pool's start workers use it until the pool is shut down.
struct PoolEntry {
  const config::PoolConfig* config = nullptr;  // points into the Config given to BuildPools
  std::unique_ptr<SandboxMaker> maker;
  std::unique_ptr<SandboxPool> pool;
};
using PoolSet = std::map<std::string, PoolEntry>;  // by the configured pool's name

// Makes the maker of one pool from the setup its sandboxes start from.
using MakerFactory = std::function<std::unique_ptr<SandboxMaker>(runner::SandboxSetup setup)>;

// The containers' setup of a configured pool for `purpose`.
runner::SandboxSetup SetupFor(const config::Config& config, const config::PoolConfig& pool,
                              PoolPurpose purpose, const ServiceOptions& options);
// The warm pool's options of a configured pool for `purpose`: one-shot pools as configured;
// session pools are named "<pool>/sessions", lend each sandbox once (fresh), hold at most
// sessions.max_total and keep sessions.warm ready for the default pool only.
pool::PoolOptions PoolOptionsFor(const config::Config& config, const config::PoolConfig& pool,
                                 PoolPurpose purpose, const runner::SandboxSetup& setup,
                                 const ServiceOptions& options);
// Every configured pool, not started. `config` must outlive the set.
PoolSet BuildPools(const config::Config& config, PoolPurpose purpose, const ServiceOptions& options,
                   const MakerFactory& make, const std::shared_ptr<spdlog::logger>& logger);

// How the idle sandboxes of one engine leave their pools: removed through the engine (it
// answers: a drain), or left to its sweep without a call to it (it is down: Sandbox::Leave).
enum class EngineExit { kRemove, kLeave };
// Retires the idle sandboxes on `engine` from every pool of `pools`; returns how many.
int RetireIdleOn(PoolSet& pools, const std::string& engine, EngineExit exit, std::string_view why);

// The production maker: HarnessSandboxes on one container engine.
class HarnessSandboxMaker final : public SandboxMaker {
 public:
  // `engine` must outlive the maker and its sandboxes.
  // `egress`: the pool's gateway on `engine` (null for a pool without a network policy).
  HarnessSandboxMaker(const engine::ContainerEngine& engine, runner::SandboxSetup setup,
                      std::shared_ptr<spdlog::logger> logger, runner::EgressLink* egress = nullptr);
  Result<std::unique_ptr<runner::Sandbox>> Create() override;
  // Starts without the preload while requests wait (pool.skip_preload_when_queued).
  Result<std::unique_ptr<runner::Sandbox>> CreateFor(const pool::StartContext& context) override;
  Result<std::unique_ptr<runner::Sandbox>> StartForSession(const std::string& session_id) override;
  Result<std::unique_ptr<runner::Sandbox>> Adopt(const engine::Listed& container) override;
  void Remove(const engine::Listed& container) override;
  // Starts in flight give up (their containers are removed); later ones fail at once.
  void CancelStarts() override { cancel_starts_.store(true); }
  config::Limits limits() const override;
  void SetLimits(const config::Limits& limits) override;
  std::string python_version() const override;

  // The MakerFactory of HarnessSandboxMakers on `engine`.
  static MakerFactory On(const engine::ContainerEngine& engine,
                         const std::shared_ptr<spdlog::logger>& logger,
                         EgressGateways* egress = nullptr);

 private:
  // The setups to start from: full and (when the pool may start lean) without preload and warm
  // plot. A sandbox refers to the setup it was started from for its whole life, so a limits
  // change adds a new pair and never frees an old one (changes are rare and a setup small).
  struct Setups {
    const runner::SandboxSetup* full = nullptr;
    const runner::SandboxSetup* lean = nullptr;  // null: never lean
  };
  Setups AddSetups(runner::SandboxSetup setup);  // setups_mu_ held
  const runner::SandboxSetup& setup() const;     // the full one now
  void NoteVersion(const runner::HarnessSandbox& sandbox);

  const engine::ContainerEngine& engine_;
  std::shared_ptr<spdlog::logger> logger_;
  runner::EgressLink* egress_ = nullptr;
  mutable std::mutex setups_mu_;
  std::vector<std::unique_ptr<const runner::SandboxSetup>> all_setups_;
  Setups current_;
  std::atomic<bool> cancel_starts_{false};
  mutable std::mutex version_mu_;
  std::string python_version_;
};

}  // namespace sandbox::service
