// The warm pool's implementation (WarmPool<T>, Lease<T>): included by warm_pool.h only. A
// template so that a lease hands out the factory's type; the logic does not depend on T beyond
// PooledSandbox's lifecycle calls, and the helpers that need no T live in warm_pool.cc.
#pragma once

#include <spdlog/logger.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/pool/warm_pool.h"

namespace sandbox::pool::detail {

// Clamps values out of range (see PoolOptions' fields); never fails.
PoolOptions Clamped(PoolOptions options);
PoolSizes ClampedSizes(PoolSizes sizes);
// A logger that drops everything when `logger` is null.
std::shared_ptr<spdlog::logger> OrNullLogger(std::shared_ptr<spdlog::logger> logger);

// The pool's state, shared by WarmPool and its leases so that a lease may outlive the pool.
// One mutex guards everything; factory, health-check and destruction calls happen outside it.
template <typename T>
class PoolCore : public std::enable_shared_from_this<PoolCore<T>> {
 public:
  PoolCore(PoolOptions options, SandboxFactory<T>& factory, std::shared_ptr<spdlog::logger> logger)
      : options_(Clamped(std::move(options))),
        factory_(factory),
        logger_(OrNullLogger(std::move(logger))),
        sizes_{options_.min_idle, options_.max_total, options_.max_concurrent_starts},
        target_(options_.min_idle) {
    if (options_.autoscale.enabled) {
      autoscaler_.emplace(options_.autoscale);
      target_ = autoscaler_->Target(options_.clock(), sizes_.max_total);
    }
  }

  ~PoolCore() { Shutdown(); }

  const PoolOptions& options() const { return options_; }

  void Start() {
    std::lock_guard lifecycle(lifecycle_mu_);
    {
      std::lock_guard lock(mu_);
      if (started_ || shutdown_) return;
      started_ = true;
      reaper_accepting_ = true;
    }
    const PoolSizes sizes = this->sizes();
    logger_->info("pool '{}': starting ({} mode, min_idle {}{}, max_total {}, {} start workers)",
                  options_.name, config::PoolModeName(options_.mode), sizes.min_idle,
                  options_.autoscale.enabled ? " (autoscaled)" : "", sizes.max_total,
                  sizes.max_concurrent_starts);
    reaper_ = std::thread([this] { ReaperLoop(); });
    maintenance_ = std::thread([this] { MaintenanceLoop(); });
    SyncWorkers(sizes.max_concurrent_starts);
  }

  PoolSizes sizes() const {
    std::lock_guard lock(mu_);
    return sizes_;
  }

  PoolSizes Resize(PoolSizes sizes) {
    sizes = ClampedSizes(sizes);
    std::lock_guard lifecycle(lifecycle_mu_);
    PoolSizes before;
    bool running = false;
    {
      std::unique_lock lock(mu_);
      before = sizes_;
      sizes_ = sizes;
      running = started_ && !shutdown_;
      work_cv_.notify_all();
      if (running) {
        UpdateTargetLocked(lock);
        TrimOverMaxTotalLocked(lock);
      } else {
        target_ =
            autoscaler_ ? autoscaler_->Target(options_.clock(), sizes_.max_total) : sizes_.min_idle;
      }
    }
    // Workers beyond a lower max_concurrent_starts end (they were woken above); more are added
    // for a higher one.
    if (running) SyncWorkers(sizes.max_concurrent_starts);
    logger_->debug(
        "pool '{}': resized: min_idle {} -> {}, max_total {} -> {}, max_concurrent_starts {} -> "
        "{}",
        options_.name, before.min_idle, sizes.min_idle, before.max_total, sizes.max_total,
        before.max_concurrent_starts, sizes.max_concurrent_starts);
    return before;
  }

  AutoscaleOptions SetAutoscale(AutoscaleOptions options) {
    std::unique_lock lock(mu_);
    AutoscaleOptions before = autoscaler_ ? autoscaler_->options() : AutoscaleOptions{};
    if (options.enabled) {
      autoscaler_.emplace(options);
      autoscaler_->Observe(DemandLocked(), options_.clock());
    } else {
      autoscaler_.reset();
    }
    maintenance_cv_.notify_all();  // the tick starts or stops
    work_cv_.notify_all();
    if (started_ && !shutdown_) {
      UpdateTargetLocked(lock);
    } else {
      target_ =
          autoscaler_ ? autoscaler_->Target(options_.clock(), sizes_.max_total) : sizes_.min_idle;
    }
    return before;
  }

  AutoscaleOptions autoscale() const {
    std::lock_guard lock(mu_);
    return autoscaler_ ? autoscaler_->options() : AutoscaleOptions{};
  }

  DrainProgress Drain() {
    std::unique_lock lock(mu_);
    ++drains_total_;
    drain_generation_ = ++generation_;
    drain_to_replace_ = static_cast<int>(idle_.size()) + leased_ + starting_ + checking_;
    drain_replaced_ = 0;
    logger_->info("pool '{}': draining {} sandboxes ({} idle, retired now; {} leased, {} starting)",
                  options_.name, drain_to_replace_, idle_.size(), leased_, starting_);
    while (!idle_.empty() && !shutdown_) {
      IdleEntry entry = std::move(idle_.front());
      idle_.pop_front();
      Dispose(lock, std::move(entry.sandbox), entry.generation);
    }
    work_cv_.notify_all();
    return DrainLocked();
  }

  int RetireIf(const std::function<bool(T&)>& pick, std::string_view why) {
    std::unique_lock lock(mu_);
    std::vector<IdleEntry> picked;
    for (auto it = idle_.begin(); it != idle_.end();) {
      if (pick(*it->sandbox)) {
        picked.push_back(std::move(*it));
        it = idle_.erase(it);
      } else {
        ++it;
      }
    }
    if (picked.empty()) return 0;
    logger_->info("pool '{}': retiring {} idle sandbox(es): {}", options_.name, picked.size(), why);
    work_cv_.notify_all();
    for (IdleEntry& entry : picked) Dispose(lock, std::move(entry.sandbox), entry.generation);
    return static_cast<int>(picked.size());
  }

  void Shutdown() {
    std::lock_guard lifecycle(lifecycle_mu_);
    {
      std::lock_guard lock(mu_);
      if (shutdown_) return;
      shutdown_ = true;
      for (Waiter* waiter : waiters_) {
        waiter->shut_down = true;
        waiter->cv.notify_one();
      }
      waiters_.clear();
      work_cv_.notify_all();
      maintenance_cv_.notify_all();
    }
    // Starts in flight are told to give up rather than waited for (a start can take seconds);
    // any that still succeed go to the reaper, which still accepts work.
    factory_.CancelStarts();
    for (auto& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
    workers_.clear();
    {
      std::lock_guard lock(mu_);
      worker_state_.clear();
    }
    if (maintenance_.joinable()) maintenance_.join();
    {
      std::unique_lock lock(mu_);
      while (!idle_.empty()) {
        auto sandbox = std::move(idle_.back().sandbox);
        const std::uint64_t generation = idle_.back().generation;
        idle_.pop_back();
        Dispose(lock, std::move(sandbox), generation);
      }
      // From here on, released leases are destroyed by the releasing thread.
      reaper_accepting_ = false;
      reap_cv_.notify_all();
    }
    if (reaper_.joinable()) reaper_.join();
    logger_->info("pool '{}': shut down", options_.name);
  }

  Result<Lease<T>> Acquire(std::optional<std::chrono::milliseconds> timeout,
                           const std::string& principal) {
    const std::chrono::milliseconds wait =
        std::max(timeout.value_or(options_.acquire_timeout), std::chrono::milliseconds{0});
    const auto deadline = Clock::now() + wait;
    std::unique_lock lock(mu_);
    if (shutdown_) return Unavailable("is shut down");
    if (!started_) return Unavailable("is not started");

    // Expired idle sandboxes are retired here too, so none is lent out even when maintenance
    // is disabled.
    RetireOldIdleLocked(lock);
    if (shutdown_) return Unavailable("is shut down");  // Dispose may drop the lock
    if (auto entry = TakeIdleLocked(lock)) {
      ++leased_;
      ++leased_by_[principal];
      ++acquired_total_;
      work_cv_.notify_all();  // idle dropped: a worker may need to refill to min_idle
      UpdateTargetLocked(lock);
      return Lease<T>(this->shared_from_this(), std::move(entry->sandbox), principal,
                      entry->generation);
    }
    if (shutdown_) return Unavailable("is shut down");

    // Wait in line; a returned or started sandbox is handed to the first waiter directly.
    Waiter me;
    me.principal = &principal;
    const std::uint64_t failures_before = start_failures_total_;
    waiters_.push_back(&me);
    last_wait_began_ = Clock::now();
    work_cv_.notify_all();  // demand rose: a worker may start one
    UpdateTargetLocked(lock);
    while (!me.sandbox && !me.shut_down) {
      if (me.cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    if (me.sandbox) {
      // Counted leased.
      return Lease<T>(this->shared_from_this(), std::move(me.sandbox), principal, me.generation);
    }
    if (me.shut_down) return Unavailable("was shut down while waiting");
    std::erase(waiters_, &me);
    ++acquire_timeouts_total_;
    work_cv_.notify_all();  // demand fell
    UpdateTargetLocked(lock);

    if (start_failures_total_ != failures_before && last_start_error_) {
      const Error& cause = *last_start_error_;
      return Error(cause.code(),
                   "pool '" + options_.name + "': no sandbox within " +
                       std::to_string(wait.count()) +
                       " ms; starting one failed: " + cause.message(),
                   cause.http_status());
    }
    std::string message = "pool '" + options_.name + "' has no free sandbox within " +
                          std::to_string(wait.count()) + " ms (max_total " +
                          std::to_string(sizes_.max_total) + ": " + std::to_string(leased_) +
                          " leased, " + std::to_string(starting_) + " starting, " +
                          std::to_string(destroying_) + " being destroyed)";
    if (last_start_error_ && consecutive_start_failures_ > 0) {
      message += "; last start error: " + last_start_error_->ToString();
    }
    return Error(ErrorCode::kBusy, std::move(message));
  }

  // The end of a lease. Runs on the releasing thread; never destroys under the lock.
  void Release(std::unique_ptr<T> sandbox, bool discarded, const std::string& principal,
               std::uint64_t generation) noexcept {
    // The sandbox is the releaser's alone until it is handed over, so ask it without the lock.
    const std::string reason = RetireReason(*sandbox, discarded);
    IdleEntry entry{std::move(sandbox), {}, {}, {}, generation, false};
    entry.name = entry.sandbox->Name();
    if (reason.empty()) {
      entry.created_at = entry.sandbox->CreatedAt();
      entry.lean = entry.sandbox->Lean();
    } else {
      logger_->debug("pool '{}': destroying sandbox {}: {}", options_.name, entry.sandbox->Name(),
                     reason);
    }
    std::unique_lock lock(mu_);
    --leased_;
    if (auto it = leased_by_.find(principal); it != leased_by_.end() && --it->second <= 0) {
      leased_by_.erase(it);
    }
    work_cv_.notify_all();  // capacity or idle changed
    // Retired for the pool's sake rather than its own: a drain, or a max_total lowered below
    // what is out.
    const bool drained = generation < drain_generation_;
    const bool over_max = KeptLocked() + 1 > sizes_.max_total;
    if (reason.empty() && (drained || over_max)) {
      logger_->debug("pool '{}': destroying sandbox {}: {}", options_.name, entry.name,
                     drained ? "drained" : "the pool is over max_total");
    }
    if (!reason.empty() || shutdown_ || drained || over_max) {
      Dispose(lock, std::move(entry.sandbox), generation);
    } else {
      entry.last_checked = Clock::now();
      Deliver(std::move(entry), /*hot=*/true);
    }
    if (!shutdown_) UpdateTargetLocked(lock);
  }

  PoolStats Stats() const {
    std::lock_guard lock(mu_);
    PoolStats stats;
    stats.sizes = sizes_;
    stats.min_idle_target = target_;
    stats.autoscaled = autoscaler_.has_value();
    stats.autoscale_peak = autoscale_peak_;
    stats.drain = DrainLocked();
    stats.idle = static_cast<int>(idle_.size());
    stats.leased = leased_;
    stats.starting = starting_;
    stats.checking = checking_;
    stats.destroying = destroying_;
    stats.waiting = static_cast<int>(waiters_.size());
    stats.start_workers = live_workers_;
    stats.created_total = created_total_;
    stats.destroyed_total = destroyed_total_;
    stats.start_failures_total = start_failures_total_;
    stats.acquire_timeouts_total = acquire_timeouts_total_;
    stats.health_check_failures_total = health_check_failures_total_;
    stats.acquired_total = acquired_total_;
    stats.starts_with_waiters_total = starts_with_waiters_total_;
    stats.last_start_error = last_start_error_;
    stats.consecutive_start_failures = consecutive_start_failures_;
    stats.start_latency_count = start_latency_count_;
    stats.start_latency_last = start_latency_last_;
    stats.start_latency_max = start_latency_max_;
    stats.start_latency_total = start_latency_total_;
    return stats;
  }

 private:
  struct IdleEntry {
    std::unique_ptr<T> sandbox;
    Clock::time_point created_at;    // cached so no virtual call happens under the lock
    Clock::time_point last_checked;  // real steady time of the last health check or return
    std::string name;
    std::uint64_t generation = 0;  // generation_ when its start began (drains)
    bool lean = false;             // PooledSandbox::Lean(), cached
  };

  // One blocked Acquire(); lives on its stack, linked in waiters_ while waiting.
  struct Waiter {
    std::condition_variable cv;
    std::unique_ptr<T> sandbox;  // set by the handing-over thread
    bool shut_down = false;
    const std::string* principal = nullptr;  // whom it waits for (the Acquire's argument)
    std::uint64_t generation = 0;            // the handed sandbox's
  };

  Error Unavailable(const std::string& what) const {
    return Error(ErrorCode::kUnavailable, "pool '" + options_.name + "' " + what);
  }

  bool TooOld(Clock::time_point created_at, Clock::time_point now) const {
    return options_.max_age.count() > 0 && now - created_at >= options_.max_age;
  }

  DrainProgress DrainLocked() const {
    return DrainProgress{drains_total_, drain_to_replace_, drain_replaced_};
  }

  int DemandLocked() const { return leased_ + static_cast<int>(waiters_.size()); }

  // An autoscaled pool's targets count the sandboxes in use: it keeps target_ sandboxes idle or
  // lent, so the idle ones it keeps are what demand does not already hold. (Counting idle ones
  // only, each returned sandbox would be one too many and each lease start one more: a start
  // and a removal per run.)
  int AutoscaledIdleLocked() const { return std::max(0, target_ - DemandLocked()); }

  // Makes workers_[0, count) the running start workers. Those beyond `count` end at their next
  // look at the sizes (Resize woke them): idle ones are joined here, and one in a start is
  // joined by a later call (or Shutdown) once it has ended. Called with lifecycle_mu_ held,
  // after sizes_ changed.
  void SyncWorkers(int count) {
    const auto wanted = static_cast<std::size_t>(std::max(count, 0));
    std::vector<std::thread> ending;
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < workers_.size(); ++i) {
        if (!workers_[i].joinable()) continue;
        const WorkerState& state = worker_state_[i];
        if (state.exited || (i >= wanted && !state.starting)) {
          ending.push_back(std::move(workers_[i]));
        }
      }
    }
    // Each of them ends without waiting for anything but mu_, which is free here.
    for (auto& worker : ending) worker.join();
    std::lock_guard lock(mu_);
    if (workers_.size() < wanted) {
      workers_.resize(wanted);
      worker_state_.resize(wanted);
    }
    for (std::size_t i = 0; i < wanted; ++i) {
      if (workers_[i].joinable()) continue;  // alive (maybe finishing a start) or respawned
      worker_state_[i] = WorkerState{};
      ++live_workers_;
      workers_[i] = std::thread([this, i] { WorkerLoop(i); });
    }
    while (!workers_.empty() && !workers_.back().joinable()) {
      workers_.pop_back();
      worker_state_.pop_back();
    }
  }

  // Re-evaluates the min_idle in effect (the autoscaler's target, else sizes_.min_idle) after
  // demand or settings changed: a rise wakes the start workers, a fall retires idle sandboxes
  // beyond the new target.
  void UpdateTargetLocked(std::unique_lock<std::mutex>& lock) {
    int target = sizes_.min_idle;
    if (autoscaler_) {
      const auto now = options_.clock();
      autoscaler_->Observe(DemandLocked(), now);
      autoscale_peak_ = autoscaler_->Peak(now);
      target = autoscaler_->Target(now, sizes_.max_total);
    } else {
      autoscale_peak_ = 0;
    }
    const int before = target_;
    target_ = target;
    if (target == before) return;
    if (autoscaler_) {
      logger_->debug(
          "pool '{}': autoscale: min_idle {} -> {} (peak demand {} in the last {} s)",
          options_.name, before, target, autoscale_peak_,
          std::chrono::duration_cast<std::chrono::seconds>(autoscaler_->options().window).count());
    }
    if (target > before) {
      work_cv_.notify_all();
    } else if (!shutdown_) {
      TrimIdleLocked(lock, autoscaler_ ? AutoscaledIdleLocked() : target,
                     "the pool's min_idle went down");
    }
  }

  // Retires idle sandboxes beyond `keep`: lean ones first, then the least recently used.
  void TrimIdleLocked(std::unique_lock<std::mutex>& lock, int keep, const char* why) {
    while (static_cast<int>(idle_.size()) > std::max(keep, 0) && !shutdown_) {
      auto victim = std::find_if(idle_.begin(), idle_.end(),
                                 [](const IdleEntry& entry) { return entry.lean; });
      if (victim == idle_.end()) victim = idle_.begin();
      IdleEntry entry = std::move(*victim);
      idle_.erase(victim);
      logger_->debug("pool '{}': retiring idle sandbox {}{}: {}", options_.name, entry.name,
                     entry.lean ? " (started lean)" : "", why);
      Dispose(lock, std::move(entry.sandbox), entry.generation);
    }
  }

  void TrimOverMaxTotalLocked(std::unique_lock<std::mutex>& lock) {
    const int over = KeptLocked() - sizes_.max_total;
    if (over > 0) {
      TrimIdleLocked(lock, static_cast<int>(idle_.size()) - over, "the pool is over max_total");
    }
  }

  // Why a returned sandbox must not serve again; empty when it may.
  std::string RetireReason(const PooledSandbox& sandbox, bool discarded) const {
    if (discarded) return "discarded by its holder";
    if (options_.mode == PoolMode::kFresh) return "fresh mode: one run per sandbox";
    if (!sandbox.Reusable()) return "not reusable";
    if (options_.max_runs > 0 && sandbox.RunCount() >= options_.max_runs) {
      return "served max_runs " + std::to_string(options_.max_runs) + " runs";
    }
    if (TooOld(sandbox.CreatedAt(), options_.clock())) return "older than max_age";
    return {};
  }

  // Takes the idle sandbox to lend, if any: the most recently returned one that is prepared
  // (LIFO: its caches are warmest, and the least recently used ones age out or get
  // health-checked), else the most recently returned one (its run waits for the preparation,
  // which is still sooner than a start). Sandboxes found broken on the way are disposed of.
  std::optional<IdleEntry> TakeIdleLocked(std::unique_lock<std::mutex>& lock) {
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::size_t pick = kNone;
    std::size_t fallback = kNone;
    std::vector<std::size_t> broken;
    for (std::size_t i = idle_.size(); i-- > 0;) {
      PooledSandbox& sandbox = *idle_[i].sandbox;
      const bool prepared = CheckPrepared(sandbox);
      if (!sandbox.Reusable()) {
        broken.push_back(i);
      } else if (prepared) {
        pick = i;
        break;
      } else if (fallback == kNone) {
        fallback = i;
      }
    }
    if (pick == kNone) pick = fallback;
    std::optional<IdleEntry> taken;
    std::vector<std::size_t> remove = broken;
    if (pick != kNone) remove.push_back(pick);
    std::sort(remove.rbegin(), remove.rend());  // erase from the back: indices stay valid
    std::vector<IdleEntry> dead;
    for (std::size_t i : remove) {
      if (i == pick) {
        taken = std::move(idle_[i]);
      } else {
        dead.push_back(std::move(idle_[i]));
      }
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (IdleEntry& entry : dead) {
      logger_->warn("pool '{}': idle sandbox {} broke while idle; replacing it", options_.name,
                    entry.name);
      Dispose(lock, std::move(entry.sandbox), entry.generation);
    }
    if (!dead.empty()) work_cv_.notify_all();
    return taken;
  }

  bool CheckPrepared(PooledSandbox& sandbox) {
    try {
      return sandbox.Prepared();
    } catch (...) {
      return false;
    }
  }

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
  bool StartNeededLocked() const {
    const int supply = static_cast<int>(idle_.size()) + starting_ + checking_;
    int idle_target = target_;
    if (autoscaler_) {
      idle_target = std::max(0, autoscaler_->GrowTarget(sizes_.max_total) - DemandLocked());
    } else if (options_.refill_after_run) {
      idle_target = std::max(std::min(1, target_), target_ - leased_);
    }
    const int demand = idle_target + static_cast<int>(waiters_.size());
    return !shutdown_ && supply < demand && TotalLocked() < sizes_.max_total &&
           starting_ < sizes_.max_concurrent_starts;
  }

  // Fair sharing between principals: the waiter whose principal holds the fewest leases of
  // this pool, the longest-waiting among equals. So a principal holding every sandbox cannot
  // keep them while another waits: each one freed goes to the other first.
  typename std::deque<Waiter*>::iterator NextWaiterLocked() {
    auto best = waiters_.begin();
    int best_held = LeasedByLocked(*(*best)->principal);
    for (auto it = std::next(best); it != waiters_.end() && best_held > 0; ++it) {
      const int held = LeasedByLocked(*(*it)->principal);
      if (held < best_held) {
        best = it;
        best_held = held;
      }
    }
    return best;
  }

  int LeasedByLocked(const std::string& principal) const {
    auto it = leased_by_.find(principal);
    return it == leased_by_.end() ? 0 : it->second;
  }

  // Gives a ready sandbox to the fairest waiter (NextWaiterLocked), else puts it in the idle list:
  // on top (hot, just used or started) or at the bottom (cold, a health-checked one keeps its LRU
  // place).
  void Deliver(IdleEntry entry, bool hot) {
    if (!waiters_.empty()) {
      auto chosen = NextWaiterLocked();
      Waiter* waiter = *chosen;
      waiters_.erase(chosen);
      waiter->sandbox = std::move(entry.sandbox);
      waiter->generation = entry.generation;
      ++leased_;
      ++leased_by_[*waiter->principal];
      ++acquired_total_;
      waiter->cv.notify_one();
      return;
    }
    if (hot) {
      idle_.push_back(std::move(entry));
    } else {
      idle_.push_front(std::move(entry));
    }
  }

  // Hands a sandbox over for destruction: to the reaper while it runs, otherwise destroys it
  // here with the lock dropped (callers re-check state afterwards). `lock` is held on entry
  // and on return. `generation` is the sandbox's: one a drain waits for counts as replaced.
  void Dispose(std::unique_lock<std::mutex>& lock, std::unique_ptr<T> sandbox,
               std::uint64_t generation) {
    if (generation < drain_generation_) ++drain_replaced_;
    ++destroying_;
    if (reaper_accepting_) {
      reap_queue_.push_back(std::move(sandbox));
      reap_cv_.notify_one();
      return;
    }
    lock.unlock();
    sandbox.reset();
    lock.lock();
    FinishDestroyLocked();
  }

  void FinishDestroyLocked() {
    --destroying_;
    ++destroyed_total_;
    work_cv_.notify_all();  // capacity freed: a replacement may start
  }

  void ReaperLoop() {
    std::unique_lock lock(mu_);
    while (true) {
      reap_cv_.wait(lock, [this] { return !reap_queue_.empty() || !reaper_accepting_; });
      if (reap_queue_.empty()) return;  // and no longer accepting: every queued one is done
      auto sandbox = std::move(reap_queue_.front());
      reap_queue_.pop_front();
      lock.unlock();
      sandbox.reset();  // may call Docker; never under the lock
      lock.lock();
      FinishDestroyLocked();
    }
  }

  void WorkerLoop(std::size_t index) {
    std::unique_lock lock(mu_);
    while (true) {
      // Past a lowered max_concurrent_starts the worker ends, giving its thread back.
      if (shutdown_ || static_cast<int>(index) >= sizes_.max_concurrent_starts) {
        worker_state_[index].exited = true;
        --live_workers_;
        return;
      }
      if (!StartNeededLocked()) {
        work_cv_.wait(lock);
        continue;
      }
      if (Clock::now() < backoff_until_) {
        work_cv_.wait_until(lock, backoff_until_);
        continue;
      }
      const std::uint64_t generation = generation_;
      StartContext context;
      context.behind_demand =
          BehindDemand(!waiters_.empty(), idle_.empty(), last_wait_began_, Clock::now());
      if (context.behind_demand) ++starts_with_waiters_total_;
      ++starting_;
      worker_state_[index].starting = true;
      lock.unlock();
      const auto begin = Clock::now();
      Result<std::unique_ptr<T>> created = CreateSandbox(context);
      const auto latency =
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin);
      if (options_.hooks.start_finished) options_.hooks.start_finished(created.ok(), latency);
      IdleEntry entry;
      std::optional<Error> start_error;
      if (created.ok()) {
        entry.sandbox = std::move(created).value();
        entry.created_at = entry.sandbox->CreatedAt();
        entry.name = entry.sandbox->Name();
        entry.lean = entry.sandbox->Lean();
        entry.generation = generation;
        entry.last_checked = Clock::now();
        logger_->debug("pool '{}': started sandbox {} in {} ms", options_.name, entry.name,
                       latency.count() / 1000);
      } else {
        start_error = created.error();
      }
      lock.lock();
      --starting_;
      worker_state_[index].starting = false;
      work_cv_.notify_all();
      if (start_error) {
        if (generation < drain_generation_) ++drain_replaced_;  // nothing left to replace
        OnStartFailureLocked(*start_error);
        continue;
      }
      ++created_total_;
      consecutive_start_failures_ = 0;
      backoff_until_ = {};
      ++start_latency_count_;
      start_latency_last_ = latency;
      start_latency_max_ = std::max(start_latency_max_, latency);
      start_latency_total_ += latency;
      // Begun before a drain (maybe from the old image), or beyond a max_total lowered since.
      if (shutdown_ || generation < drain_generation_ || KeptLocked() + 1 > sizes_.max_total) {
        Dispose(lock, std::move(entry.sandbox), generation);
      } else {
        Deliver(std::move(entry), /*hot=*/true);
      }
    }
  }

  Result<std::unique_ptr<T>> CreateSandbox(const StartContext& context) {
    try {
      auto created = factory_.CreateFor(context);
      if (created.ok() && created.value() == nullptr) {
        return Error(ErrorCode::kInternal, "sandbox factory returned no sandbox");
      }
      return created;
    } catch (const std::exception& e) {  // the factory should not throw; keep the pool alive
      return Error(ErrorCode::kInternal, std::string("sandbox factory threw: ") + e.what());
    } catch (...) {
      return Error(ErrorCode::kInternal, "sandbox factory threw");
    }
  }

  void OnStartFailureLocked(const Error& error) {
    ++start_failures_total_;
    ++consecutive_start_failures_;
    last_start_error_ = error;
    const std::chrono::milliseconds delay = StartBackoff(
        consecutive_start_failures_, options_.start_backoff_initial, options_.start_backoff_max);
    backoff_until_ = Clock::now() + delay;
    // Logged under the lock: rare, and spdlog does not call back into the pool.
    logger_->warn("pool '{}': starting a sandbox failed ({} in a row), next try in {} ms: {}",
                  options_.name, consecutive_start_failures_, delay.count(), error.ToString());
  }

  bool CheckHealth(PooledSandbox& sandbox) {
    try {
      return sandbox.Healthy();
    } catch (...) {
      return false;
    }
  }

  void MaintenanceLoop() {
    const std::chrono::milliseconds interval = options_.health_check_interval;
    std::unique_lock lock(mu_);
    while (!shutdown_) {
      // The autoscaler's peak leaves its window with time alone: look again every tick.
      if (autoscaler_) {
        UpdateTargetLocked(lock);
        TrimIdleLocked(lock, AutoscaledIdleLocked(), "autoscaled down");
        if (shutdown_) return;
      }
      if (interval.count() == 0) {  // health checks disabled: only ticks and Shutdown wake us
        if (autoscaler_) {
          maintenance_cv_.wait_for(lock, options_.autoscale_tick);
        } else {
          maintenance_cv_.wait(lock);
        }
        continue;
      }
      RetireOldIdleLocked(lock);
      if (shutdown_) return;

      // Health-check the least recently used idle sandbox that is due, one at a time, so the
      // idle list is never emptied by checks.
      const auto now = Clock::now();
      auto due = std::find_if(idle_.begin(), idle_.end(), [&](const IdleEntry& entry) {
        return now - entry.last_checked >= interval;
      });
      if (due != idle_.end()) {
        IdleEntry entry = std::move(*due);
        idle_.erase(due);
        ++checking_;
        lock.unlock();
        const bool healthy = CheckHealth(*entry.sandbox);
        if (!healthy) {
          logger_->warn("pool '{}': idle sandbox {} failed its health check; replacing it",
                        options_.name, entry.name);
        }
        lock.lock();
        --checking_;
        work_cv_.notify_all();
        if (!healthy) ++health_check_failures_total_;
        if (!healthy || shutdown_ || entry.generation < drain_generation_) {
          Dispose(lock, std::move(entry.sandbox), entry.generation);
        } else {
          entry.last_checked = Clock::now();
          Deliver(std::move(entry), /*hot=*/false);
        }
        continue;
      }

      // Sleep until the next check is due, or one interval when nothing is idle.
      auto next = now + interval;
      for (const IdleEntry& entry : idle_) next = std::min(next, entry.last_checked + interval);
      if (autoscaler_) next = std::min(next, now + options_.autoscale_tick);
      maintenance_cv_.wait_until(lock, next);
    }
  }

  void RetireOldIdleLocked(std::unique_lock<std::mutex>& lock) {
    if (options_.max_age.count() <= 0) return;
    const auto now = options_.clock();
    std::vector<IdleEntry> old;
    for (auto it = idle_.begin(); it != idle_.end();) {
      if (TooOld(it->created_at, now)) {
        old.push_back(std::move(*it));
        it = idle_.erase(it);
      } else {
        ++it;
      }
    }
    if (old.empty()) return;
    work_cv_.notify_all();
    for (IdleEntry& entry : old) {
      logger_->info("pool '{}': retiring idle sandbox {}: older than max_age", options_.name,
                    entry.name);
      Dispose(lock, std::move(entry.sandbox), entry.generation);
    }
  }

  const PoolOptions options_;
  SandboxFactory<T>& factory_;
  const std::shared_ptr<spdlog::logger> logger_;

  // A start worker as the pool sees it (worker_state_, under mu_).
  struct WorkerState {
    bool starting = false;  // in a start, outside the lock
    bool exited = false;    // returned; its thread awaits join
  };

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
  std::deque<std::unique_ptr<T>> reap_queue_;
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

namespace sandbox::pool {

template <typename T>
void Lease<T>::Reset() noexcept {
  if (sandbox_ && core_) core_->Release(std::move(sandbox_), discarded_, principal_, generation_);
  sandbox_.reset();
  core_.reset();
  discarded_ = false;
}

template <typename T>
WarmPool<T>::WarmPool(PoolOptions options, SandboxFactory<T>& factory,
                      std::shared_ptr<spdlog::logger> logger)
    : core_(std::make_shared<detail::PoolCore<T>>(std::move(options), factory, std::move(logger))) {
}

template <typename T>
WarmPool<T>::~WarmPool() {
  core_->Shutdown();
}

template <typename T>
void WarmPool<T>::Start() {
  core_->Start();
}

template <typename T>
void WarmPool<T>::Shutdown() {
  core_->Shutdown();
}

template <typename T>
Result<Lease<T>> WarmPool<T>::Acquire(std::optional<std::chrono::milliseconds> timeout,
                                      const std::string& principal) {
  const auto begin = Clock::now();
  auto lease = core_->Acquire(timeout, principal);
  if (const auto& hook = core_->options().hooks.acquire_finished) {
    hook(lease.ok(), std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin));
  }
  return lease;
}

template <typename T>
PoolSizes WarmPool<T>::Resize(PoolSizes sizes) {
  return core_->Resize(sizes);
}

template <typename T>
PoolSizes WarmPool<T>::sizes() const {
  return core_->sizes();
}

template <typename T>
AutoscaleOptions WarmPool<T>::SetAutoscale(AutoscaleOptions options) {
  return core_->SetAutoscale(options);
}

template <typename T>
AutoscaleOptions WarmPool<T>::autoscale() const {
  return core_->autoscale();
}

template <typename T>
DrainProgress WarmPool<T>::Drain() {
  return core_->Drain();
}

template <typename T>
int WarmPool<T>::RetireIf(const std::function<bool(T&)>& pick, std::string_view why) {
  return core_->RetireIf(pick, why);
}

template <typename T>
PoolStats WarmPool<T>::stats() const {
  return core_->Stats();
}

template <typename T>
const PoolOptions& WarmPool<T>::options() const {
  return core_->options();
}

}  // namespace sandbox::pool
