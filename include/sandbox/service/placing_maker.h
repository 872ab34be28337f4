// PlacingMaker: the maker of a pool that runs on several engines (docs/scale-out.md section 4).
// It holds one maker per engine the pool may use and places every start, session start included,
// on the engine with the fewest of the pool's sandboxes alive or starting there
// (engine::Choose, ties at random). An engine the health watch has down, or that an operator
// drains, is not placed on at all (EngineHealth). An engine whose start failed is passed over for a
// back-off that doubles with each failure in a row (1 s to 30 s by default), and the start is tried
// at once on the next engine, so a pool refills on the engines that work while one does not.
// Sandboxes are counted per engine from their start (or adoption) to their destruction, so the
// pool itself stays one pool: its min_idle, max_total, waiters and fair share span the engines.
// With one engine a pool gets that engine's maker itself (PlacingMakersOn): nothing changes.
//
// Thread-safety: as SandboxMaker: every method from any thread; a sandbox it made may outlive
// it (the count it decrements is shared).
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/engine/container_engine.h"
#include "sandbox/engine/engine_health.h"
#include "sandbox/engine/placement.h"
#include "sandbox/service/sandbox_pools.h"

namespace sandbox::service {

// One engine a pool may run on, and the maker of the pool's sandboxes there.
struct EngineMaker {
  const engine::ContainerEngine* engine = nullptr;
  std::unique_ptr<SandboxMaker> maker;
};

struct PlacingOptions {
  std::string pool;  // for log lines
  // Every engine of the server: Remove() reaches a container on an engine the pool does not
  // run on (a session's pool may have been reconfigured since its container was made).
  engine::EngineList all_engines;
  // Which engines take new sandboxes (up and not draining); null: every one.
  const engine::EngineHealth* health = nullptr;
  // Starts in flight on one engine at once (the pool's max_concurrent_starts).
  int max_concurrent_starts = 2;
  // The pause of an engine after its first failed start in a row; each further one doubles it,
  // up to backoff_max.
  std::chrono::milliseconds backoff_first{1000};
  std::chrono::milliseconds backoff_max{30000};
  std::uint64_t seed = 0;  // of the tie-break; 0: a random one
  // Now, for the back-off; empty: the steady clock. Tests pass their own.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

class PlacingMaker final : public SandboxMaker {
 public:
  // `makers` must not be empty; each engine's maker makes the same pool's sandboxes there.
  PlacingMaker(std::vector<EngineMaker> makers, PlacingOptions options,
               std::shared_ptr<spdlog::logger> logger);

  Result<std::unique_ptr<runner::Sandbox>> Create() override;
  Result<std::unique_ptr<runner::Sandbox>> CreateFor(const pool::StartContext& context) override;
  Result<std::unique_ptr<runner::Sandbox>> StartForSession(const std::string& session_id) override;
  // On the engine that listed the container (kNotFound when it is not one of this pool's).
  Result<std::unique_ptr<runner::Sandbox>> Adopt(const engine::Listed& container) override;
  void Remove(const engine::Listed& container) override;
  void CancelStarts() override;
  config::Limits limits() const override;
  void SetLimits(const config::Limits& limits) override;
  std::string python_version() const override;

  std::vector<EnginePlacement> placements() const override;

 private:
  using Made = Result<std::unique_ptr<runner::Sandbox>>;
  struct Slot {
    const engine::ContainerEngine* engine = nullptr;
    std::unique_ptr<SandboxMaker> maker;
    std::shared_ptr<std::atomic<int>> alive = std::make_shared<std::atomic<int>>(0);
    int starting = 0;
    int failures_in_row = 0;
    std::chrono::steady_clock::time_point retry_at{};
    std::string last_error;
  };

  std::chrono::steady_clock::time_point Now() const;
  // The engine for the next start, counted as starting there; none when every engine is in
  // `tried`. Engines backing off are passed over while another is eligible. mu_ held.
  std::optional<std::size_t> Place(const std::vector<bool>& tried);
  // A start placed engine by engine until one succeeds or each engine was tried once.
  Made Start(const std::function<Made(SandboxMaker&)>& start);
  // The sandbox counted on its engine until it is destroyed.
  std::unique_ptr<runner::Sandbox> Counted(Slot& slot, std::unique_ptr<runner::Sandbox> sandbox);
  Slot* SlotOf(const std::string& engine);

  const PlacingOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::vector<Slot> slots_;  // fixed after construction; counts under mu_
  mutable std::mutex mu_;
  engine::Rng rng_;
};

// The engines each pool may run on, by pool name: those of pools[].engines that are connected
// and have the pool's image (SandboxService decides; never empty).
using PlaceableEngines = std::map<std::string, engine::EngineList>;

// The MakerFactory of pools over `placeable`: with one engine in `all` (the server's), the
// HarnessSandboxMaker on it, exactly as before there were several; otherwise a PlacingMaker
// over each pool's engines. The engines must outlive the makers.
// `egress` (may be null) gives each engine's maker its gateway for pools with a network policy.
MakerFactory PlacingMakersOn(PlaceableEngines placeable, engine::EngineList all,
                             const engine::EngineHealth* health,
                             const std::shared_ptr<spdlog::logger>& logger,
                             EgressGateways* egress = nullptr);

}  // namespace sandbox::service
