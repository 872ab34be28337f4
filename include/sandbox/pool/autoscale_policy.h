// The autoscaler's policy: which min_idle a pool keeps, from the demand it observed. A pure
// class (no threads, no lock, time passed in), so it is tested with a fake clock; the warm pool
// owns one per autoscaled pool and calls it under its own lock.
//
// Demand is leased + waiting sandboxes. Two targets, each clamped to [min_idle_floor,
// min_idle_ceiling] and to max_total, each counting sandboxes idle or lent (the ones in use
// count, as with refill_after_run, so `headroom` stay idle at the peak):
//   - Target(): what the pool keeps: the peak demand over the last `window` plus `headroom`.
//     Sandboxes beyond it are retired, so the pool shrinks only once a peak has left the window.
//   - GrowTarget(): what the pool starts sandboxes for: the demand now plus `headroom`. It grows
//     the moment demand rises (a lease or a waiter counts at once: the next idle sandbox starts
//     before the next request has to wait), but starts nothing for a peak that has passed.
// Thread-safety: none; the owner serialises calls.
#pragma once

#include <chrono>
#include <deque>
#include <utility>

#include "sandbox/pool/pooled_sandbox.h"

namespace sandbox::pool {

struct AutoscaleOptions {
  bool enabled = false;
  int min_idle_floor = 1;    // the target never goes below it
  int min_idle_ceiling = 0;  // nor above it; 0 = the pool's max_total
  int headroom = 1;          // idle sandboxes on top of the window's peak demand
  std::chrono::milliseconds window{std::chrono::seconds(60)};  // how long a peak is remembered
  bool operator==(const AutoscaleOptions&) const = default;
};

class AutoscalePolicy {
 public:
  explicit AutoscalePolicy(AutoscaleOptions options);

  // The demand (leased + waiting) from `now` on, until the next call.
  void Observe(int demand, Clock::time_point now);
  // The sandboxes (idle or lent) to keep at `now`.
  int Target(Clock::time_point now, int max_total);
  // The sandboxes (idle or lent) to start up to: the latest demand plus headroom.
  int GrowTarget(int max_total) const;
  // The highest demand within the window ending at `now` (the current one included).
  int Peak(Clock::time_point now);

  const AutoscaleOptions& options() const { return options_; }

 private:
  void Prune(Clock::time_point now);
  int Clamp(int wanted, int max_total) const;

  AutoscaleOptions options_;
  // (since, demand) in time order; each holds until the next one begins. Only changes are kept,
  // and only those that still overlap the window.
  std::deque<std::pair<Clock::time_point, int>> samples_;
};

}  // namespace sandbox::pool
