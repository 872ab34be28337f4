// Placement: which engine of a pool gets the next container start, and which engine's idle
// sandbox the next acquire gets (docs/scale-out.md section 4). A pure function over the pool's
// own counts, so the unit tests and bench/placement_bench.cc drive it with fake loads.
// Thread-safety: Choose() touches only its arguments; the caller holds the pool's lock, which
// also guards the Rng.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace sandbox::engine {

// One engine as one pool sees it at the moment of a decision.
struct EngineLoad {
  bool up = true;         // answering (the engine watch); a down engine is never chosen
  bool draining = false;  // POST /admin/engines/{name}/drain: no new placements
  bool has_image = true;  // false: excluded from this pool (its image is missing there)
  int idle = 0;           // this pool's idle sandboxes on the engine
  int leased = 0;         // this pool's sandboxes lent out (runs, sessions) on the engine
  int starting = 0;       // this pool's starts in flight on the engine
  // Starts in flight this engine takes at once for the pool (the pool's max_concurrent_starts).
  int max_concurrent_starts = 2;
  // The engine's share of the pool's max_total: max_total / n over n eligible engines. Only the
  // ratios between engines matter; must be positive.
  double share = 1.0;
};

enum class Purpose {
  // A container start (the pool's start worker): eligible = up, not draining, has the image,
  // starting < max_concurrent_starts; lowest (idle + leased + starting) / share.
  kStart,
  // Lending an idle sandbox (Acquire): among the eligible engines with an idle sandbox, lowest
  // leased / share (the run's CPU competes with the runs already there).
  kLend,
};

// The randomness of the tie-break, injected so tests can seed it and nothing is global.
// Not thread-safe: one per pool, used under the pool's lock.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n); n > 0.
  std::size_t Below(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(engine_);
  }

 private:
  std::mt19937_64 engine_;
};

// The index in `loads` of the engine to use: the exact minimum score over the eligible engines,
// ties broken uniformly at random (one draw of `rng`, none without a tie). nullopt when no
// engine is eligible. Every engine is scored, none sampled: the counts are this process's own
// and current, and the scan is cheap (scale-out.md section 4, bench/placement_bench.cc).
std::optional<std::size_t> Choose(const std::vector<EngineLoad>& loads, Purpose purpose, Rng& rng);

}  // namespace sandbox::engine
