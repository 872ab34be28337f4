#include "sandbox/pool/warm_pool.h"

#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <memory>

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

namespace detail {

PoolOptions Clamped(PoolOptions options) {
  options.max_total = std::max(options.max_total, 1);
  options.min_idle = std::clamp(options.min_idle, 0, options.max_total);
  options.max_concurrent_starts = std::max(options.max_concurrent_starts, 1);
  options.acquire_timeout = std::max(options.acquire_timeout, milliseconds{0});
  options.health_check_interval = std::max(options.health_check_interval, milliseconds{0});
  options.start_backoff_max = std::max(options.start_backoff_max, options.start_backoff_initial);
  options.autoscale_tick = std::max(options.autoscale_tick, milliseconds{1});
  if (!options.clock) options.clock = [] { return Clock::now(); };
  return options;
}

PoolSizes ClampedSizes(PoolSizes sizes) {
  sizes.max_total = std::max(sizes.max_total, 1);
  sizes.min_idle = std::clamp(sizes.min_idle, 0, sizes.max_total);
  sizes.max_concurrent_starts = std::max(sizes.max_concurrent_starts, 1);
  return sizes;
}

std::shared_ptr<spdlog::logger> OrNullLogger(std::shared_ptr<spdlog::logger> logger) {
  if (logger) return logger;
  return std::make_shared<spdlog::logger>("pool", std::make_shared<spdlog::sinks::null_sink_mt>());
}

}  // namespace detail

}  // namespace sandbox::pool
