// The warm pool's core (detail::PoolCore of warm_pool.h): the one implementation behind every
// WarmPool<T> and its leases, over PooledSandboxes. The sandbox states it keeps, the transitions
// and who makes them, and the invariants on its counts: POOL_ARCHITECTURE.md, beside this file.
//
// Thread-safety: every public method may be called from any thread at any time, concurrently
// (as WarmPool's). One mutex, mu_, guards all the state below it. The factory, the health
// checks and destruction are called without it; only an idle sandbox's Prepared() and
// Reusable() and a RetireIf pick, which must not block, are called under it. lifecycle_mu_
// serialises Start(), Resize() and Shutdown() (the thread handles), and is taken before mu_.
#pragma once

#include <spdlog/logger.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sandbox/pool/warm_pool.h"

namespace sandbox::pool::detail {

class PoolCoreImpl final : public PoolCore {
 public:
  PoolCoreImpl(PoolOptions options, std::unique_ptr<ErasedFactory> factory,
               std::shared_ptr<spdlog::logger> logger);
  ~PoolCoreImpl() override;  // Shutdown()
  PoolCoreImpl(const PoolCoreImpl&) = delete;
  PoolCoreImpl& operator=(const PoolCoreImpl&) = delete;

  void Start() override;
  void Shutdown() override;
  Result<Lent> Acquire(std::optional<std::chrono::milliseconds> timeout,
                       const std::string& principal) override;
  // Runs on the releasing thread; never destroys under the lock.
  void Release(std::unique_ptr<PooledSandbox> sandbox, bool discarded, const std::string& principal,
               std::uint64_t generation) noexcept override;
  PoolSizes Resize(PoolSizes sizes) override;
  PoolSizes sizes() const override;
  AutoscaleOptions SetAutoscale(AutoscaleOptions options) override;
  AutoscaleOptions autoscale() const override;
  DrainProgress Drain() override;
  int RetireIf(const std::function<bool(PooledSandbox&)>& pick, std::string_view why) override;
  PoolStats Stats() const override;
  const PoolOptions& options() const override { return options_; }

 private:
  // An idle sandbox (in idle_), or one on its way there or out.
  struct IdleEntry {
    std::unique_ptr<PooledSandbox> sandbox;
    Clock::time_point created_at;    // cached so no virtual call happens under the lock
    Clock::time_point last_checked;  // real steady time of the last health check or return
    std::string name;
    std::uint64_t generation = 0;  // generation_ when its start began (drains)
    bool lean = false;             // PooledSandbox::Lean(), cached
  };

  // One blocked Acquire(); lives on its stack, linked in waiters_ while waiting.
  struct Waiter {
    std::condition_variable cv;
    std::unique_ptr<PooledSandbox> sandbox;  // set by the handing-over thread
    bool shut_down = false;
    const std::string* principal = nullptr;  // whom it waits for (the Acquire's argument)
    std::uint64_t generation = 0;            // the handed sandbox's
  };

  // A start worker as the pool sees it (worker_state_, under mu_).
  struct WorkerState {
    bool starting = false;  // in a start, outside the lock
    bool exited = false;    // returned; its thread awaits join
  };

  Error Unavailable(const std::string& what) const;
  bool TooOld(Clock::time_point created_at, Clock::time_point now) const;
  DrainProgress DrainLocked() const;
  int DemandLocked() const { return leased_ + static_cast<int>(waiters_.size()); }

  // An autoscaled pool's targets count the sandboxes in use: it keeps target_ sandboxes idle or
  // lent, so the idle ones it keeps are what demand does not already hold. (Counting idle ones
  // only, each returned sandbox would be one too many and each lease start one more: a start
  // and a removal per run.)
  int AutoscaledIdleLocked() const;

  // Makes workers_[0, count) the running start workers. Those beyond `count` end at their next
  // look at the sizes (Resize woke them): idle ones are joined here, and one in a start is
  // joined by a later call (or Shutdown) once it has ended. Called with lifecycle_mu_ held,
  // after sizes_ changed.
  void SyncWorkers(int count);

  // Re-evaluates the min_idle in effect (the autoscaler's target, else sizes_.min_idle) after
  // demand or settings changed: a rise wakes the start workers, a fall retires idle sandboxes
  // beyond the new target.
  void UpdateTargetLocked(std::unique_lock<std::mutex>& lock);

  // Retires idle sandboxes beyond `keep`: lean ones first, then the least recently used.
  void TrimIdleLocked(std::unique_lock<std::mutex>& lock, int keep, const char* why);
  void TrimOverMaxTotalLocked(std::unique_lock<std::mutex>& lock);

  // Why a returned sandbox must not serve again; empty when it may.
  std::string RetireReason(const PooledSandbox& sandbox, bool discarded) const;

  // Takes the idle sandbox to lend, if any: the most recently returned one that is prepared
  // (LIFO: its caches are warmest, and the least recently used ones age out or get
  // health-checked), else the most recently returned one (its run waits for the preparation,
  // which is still sooner than a start). Sandboxes found broken on the way are disposed of.
  std::optional<IdleEntry> TakeIdleLocked(std::unique_lock<std::mutex>& lock);
  static bool CheckPrepared(PooledSandbox& sandbox);

  // The sandboxes the pool keeps: all but those being destroyed (which still count towards
  // max_total for starts, but are already gone when deciding what to keep under it).
  int KeptLocked() const { return TotalLocked() - destroying_; }
  int TotalLocked() const {
    return static_cast<int>(idle_.size()) + leased_ + starting_ + checking_ + destroying_;
  }

  // Whether a worker should start a sandbox now (back-off aside): enough for min_idle plus
  // one per waiter, within max_total. Checked ones count as supply: they most likely return.
  // With refill_after_run, leased ones count towards min_idle too, except that one stays idle:
  // their replacements start once they are released (see PoolOptions::refill_after_run).
  // At most max_concurrent_starts starts at once (the workers beyond it wait).
  bool StartNeededLocked() const;

  // Fair sharing between principals: the waiter whose principal holds the fewest leases of
  // this pool, the longest-waiting among equals. So a principal holding every sandbox cannot
  // keep them while another waits: each one freed goes to the other first.
  std::deque<Waiter*>::iterator NextWaiterLocked();
  int LeasedByLocked(const std::string& principal) const;

  // Gives a ready sandbox to the fairest waiter (NextWaiterLocked), else puts it in the idle
  // list: on top (hot, just used or started) or at the bottom (cold, a health-checked one keeps
  // its LRU place).
  void Deliver(IdleEntry entry, bool hot);

  // Hands a sandbox over for destruction: to the reaper while it runs, otherwise destroys it
  // here with the lock dropped (callers re-check state afterwards). `lock` is held on entry
  // and on return. `generation` is the sandbox's: one a drain waits for counts as replaced.
  void Dispose(std::unique_lock<std::mutex>& lock, std::unique_ptr<PooledSandbox> sandbox,
               std::uint64_t generation);
  void FinishDestroyLocked();

  // The threads' bodies.
  void ReaperLoop();
  void WorkerLoop(std::size_t index);
  void MaintenanceLoop();

  Result<std::unique_ptr<PooledSandbox>> CreateSandbox(const StartContext& context);
  void OnStartFailureLocked(const Error& error);
  static bool CheckHealth(PooledSandbox& sandbox);
  void RetireOldIdleLocked(std::unique_lock<std::mutex>& lock);

  const PoolOptions options_;
  const std::unique_ptr<ErasedFactory> factory_;
  const std::shared_ptr<spdlog::logger> logger_;

  std::mutex lifecycle_mu_;  // serialises Start(), Resize() and Shutdown(); taken before mu_
  std::thread reaper_;
  std::thread maintenance_;
  std::vector<std::thread> workers_;  // by index; an empty slot was joined (lifecycle_mu_)

  mutable std::mutex mu_;
  std::condition_variable work_cv_;         // start workers: demand, capacity or back-off changed
  std::condition_variable maintenance_cv_;  // maintenance: shutdown
  std::condition_variable reap_cv_;         // reaper: queue or accepting changed
  bool started_ = false;
  bool shutdown_ = false;
  bool reaper_accepting_ = false;

  std::deque<IdleEntry> idle_;            // back = most recently returned (taken first)
  std::deque<Waiter*> waiters_;           // in arrival order; served by NextWaiterLocked()
  std::map<std::string, int> leased_by_;  // leases out per principal (only those holding one)
  std::deque<std::unique_ptr<PooledSandbox>> reap_queue_;
  PoolSizes sizes_;
  int target_ = 0;  // the min_idle in effect (UpdateTargetLocked)
  std::optional<AutoscalePolicy> autoscaler_;
  int autoscale_peak_ = 0;
  std::uint64_t generation_ = 0;        // bumped by each drain
  std::uint64_t drain_generation_ = 0;  // sandboxes of an older generation are to be replaced
  std::uint64_t drains_total_ = 0;
  int drain_to_replace_ = 0;
  int drain_replaced_ = 0;
  int leased_ = 0;
  int starting_ = 0;
  int checking_ = 0;
  int destroying_ = 0;
  std::vector<WorkerState> worker_state_;  // by worker index, as workers_
  int live_workers_ = 0;                   // start workers whose loop has not returned

  Clock::time_point backoff_until_{};
  std::optional<Clock::time_point> last_wait_began_;  // the latest Acquire() that had to wait
  int consecutive_start_failures_ = 0;
  std::optional<Error> last_start_error_;

  std::uint64_t created_total_ = 0;
  std::uint64_t destroyed_total_ = 0;
  std::uint64_t start_failures_total_ = 0;
  std::uint64_t acquire_timeouts_total_ = 0;
  std::uint64_t health_check_failures_total_ = 0;
  std::uint64_t acquired_total_ = 0;
  std::uint64_t starts_with_waiters_total_ = 0;
  std::uint64_t start_latency_count_ = 0;
  std::chrono::microseconds start_latency_last_{0};
  std::chrono::microseconds start_latency_max_{0};
  std::chrono::microseconds start_latency_total_{0};
};

}  // namespace sandbox::pool::detail
