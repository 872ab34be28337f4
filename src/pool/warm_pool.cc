#include "sandbox/pool/warm_pool.h"

#include <algorithm>

namespace sandbox::pool {

using std::chrono::milliseconds;

PoolOptions PoolOptionsFromConfig(const config::PoolConfig& config) {
  PoolOptions options;
  options.name = config.name;
  options.mode = config.mode;
  options.min_idle = config.min_idle;
  options.max_total = config.max_total;
  options.max_concurrent_starts = config.max_concurrent_starts;
  options.refill_after_run = config.refill_after_run;
  options.acquire_timeout = config.acquire_timeout;
  options.max_age = config.max_age;
  options.max_runs = config.max_runs;
  options.autoscale.enabled = config.autoscale.enabled;
  options.autoscale.min_idle_floor = config.autoscale.min_idle_floor;
  options.autoscale.min_idle_ceiling = config.autoscale.min_idle_ceiling;
  options.autoscale.headroom = config.autoscale.headroom;
  options.autoscale.window = config.autoscale.window;
  return options;
}

milliseconds StartBackoff(int consecutive_failures, milliseconds initial, milliseconds max) {
  if (consecutive_failures <= 0 || initial.count() <= 0) return milliseconds{0};
  milliseconds delay = initial;
  // Doubling by loop rather than shifting, so no count of failures can overflow.
  for (int i = 1; i < consecutive_failures && delay < max; ++i) delay *= 2;
  return std::min(delay, max);
}

bool BehindDemand(bool requests_waiting, bool idle_empty,
                  std::optional<Clock::time_point> last_wait_began, Clock::time_point now,
                  milliseconds window) {
  if (requests_waiting) return true;
  return idle_empty && last_wait_began.has_value() && now - *last_wait_began < window;
}

}  // namespace sandbox::pool
