#include "sandbox/pool/autoscale_policy.h"

#include <algorithm>

namespace sandbox::pool {

AutoscalePolicy::AutoscalePolicy(AutoscaleOptions options) : options_(options) {
  options_.min_idle_floor = std::max(options_.min_idle_floor, 0);
  options_.min_idle_ceiling = std::max(options_.min_idle_ceiling, 0);
  options_.headroom = std::max(options_.headroom, 0);
  options_.window = std::max(options_.window, std::chrono::milliseconds{0});
}

void AutoscalePolicy::Observe(int demand, Clock::time_point now) {
  demand = std::max(demand, 0);
  if (!samples_.empty() && samples_.back().second == demand) return;
  samples_.emplace_back(now, demand);
  Prune(now);
}

void AutoscalePolicy::Prune(Clock::time_point now) {
  // The first sample still counts while the one after it began within the window.
  const auto window_start = now - options_.window;
  while (samples_.size() > 1 && samples_[1].first <= window_start) samples_.pop_front();
}

int AutoscalePolicy::Peak(Clock::time_point now) {
  Prune(now);
  int peak = 0;
  for (const auto& sample : samples_) peak = std::max(peak, sample.second);
  return peak;
}

int AutoscalePolicy::Clamp(int wanted, int max_total) const {
  const int ceiling =
      options_.min_idle_ceiling > 0 ? std::min(options_.min_idle_ceiling, max_total) : max_total;
  const int floor = std::min(options_.min_idle_floor, ceiling);
  return std::clamp(wanted, floor, std::max(floor, ceiling));
}

int AutoscalePolicy::Target(Clock::time_point now, int max_total) {
  return Clamp(Peak(now) + options_.headroom, max_total);
}

int AutoscalePolicy::GrowTarget(int max_total) const {
  const int current = samples_.empty() ? 0 : samples_.back().second;
  return Clamp(current + options_.headroom, max_total);
}

}  // namespace sandbox::pool
