// Choose(): the exact minimum over the eligible engines, ties at random (scale-out.md section 4).
#include "sandbox/engine/placement.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace sandbox::engine {
namespace {

bool Placeable(const EngineLoad& e) { return e.up && !e.draining && e.has_image && e.share > 0; }

bool Eligible(const EngineLoad& e, Purpose purpose) {
  if (!Placeable(e)) return false;
  return purpose == Purpose::kStart ? e.starting < e.max_concurrent_starts : e.idle > 0;
}

double Score(const EngineLoad& e, Purpose purpose) {
  const int count = purpose == Purpose::kStart ? e.idle + e.leased + e.starting : e.leased;
  return count / e.share;
}

}  // namespace

std::optional<std::size_t> Choose(const std::vector<EngineLoad>& loads, Purpose purpose, Rng& rng) {
  // Two passes, so a tie costs one draw however many engines share the minimum. Equal counts
  // over equal shares divide to the same double, so ties are exact.
  double best = 0;
  std::size_t ties = 0;
  for (const EngineLoad& e : loads) {
    if (!Eligible(e, purpose)) continue;
    const double score = Score(e, purpose);
    if (ties == 0 || score < best) {
      best = score;
      ties = 1;
    } else if (score == best) {
      ++ties;
    }
  }
  if (ties == 0) return std::nullopt;
  std::size_t pick = ties == 1 ? 0 : rng.Below(ties);
  for (std::size_t i = 0; i < loads.size(); ++i) {
    if (!Eligible(loads[i], purpose) || Score(loads[i], purpose) != best) continue;
    if (pick == 0) return i;
    --pick;
  }
  return std::nullopt;  // unreachable: the first pass counted `ties` such engines
}

}  // namespace sandbox::engine
