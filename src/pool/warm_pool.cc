#include "sandbox/pool/warm_pool.h"

#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace sandbox::pool {

using std::chrono::duration_cast;
using std::chrono::microseconds;
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
namespace {

PoolOptions Clamped(PoolOptions options) {
  options.max_total = std::max(options.max_total, 1);
  options.min_idle = std::clamp(options.min_idle, 0, options.max_total);
  options.max_concurrent_starts = std::max(options.max_concurrent_starts, 1);
  options.acquire_timeout = std::max(options.acquire_timeout, milliseconds{0});
  options.health_check_interval = std::max(options.health_check_interval, milliseconds{0});
  options.start_backoff_max = std::max(options.start_backoff_max, options.start_backoff_initial);
  if (!options.clock) options.clock = [] { return Clock::now(); };
  return options;
}

std::shared_ptr<spdlog::logger> OrNullLogger(std::shared_ptr<spdlog::logger> logger) {
  if (logger) return logger;
  return std::make_shared<spdlog::logger>("pool", std::make_shared<spdlog::sinks::null_sink_mt>());
}

}  // namespace

// The pool's state, shared by WarmPool and its leases so that a lease may outlive the pool.
// One mutex guards everything; factory, health-check and destruction calls happen outside it.
class PoolCore : public std::enable_shared_from_this<PoolCore> {
 public:
  PoolCore(PoolOptions options, SandboxFactory& factory, std::shared_ptr<spdlog::logger> logger)
      : options_(Clamped(std::move(options))),
        factory_(factory),
        logger_(OrNullLogger(std::move(logger))) {}

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
    logger_->info("pool '{}': starting ({} mode, min_idle {}, max_total {}, {} start workers)",
                  options_.name, config::PoolModeName(options_.mode), options_.min_idle,
                  options_.max_total, options_.max_concurrent_starts);
    reaper_ = std::thread([this] { ReaperLoop(); });
    maintenance_ = std::thread([this] { MaintenanceLoop(); });
    for (int i = 0; i < options_.max_concurrent_starts; ++i) {
      workers_.emplace_back([this] { WorkerLoop(); });
    }
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
    for (auto& worker : workers_) worker.join();
    workers_.clear();
    if (maintenance_.joinable()) maintenance_.join();
    {
      std::unique_lock lock(mu_);
      while (!idle_.empty()) {
        auto sandbox = std::move(idle_.back().sandbox);
        idle_.pop_back();
        Dispose(lock, std::move(sandbox));
      }
      // From here on, released leases are destroyed by the releasing thread.
      reaper_accepting_ = false;
      reap_cv_.notify_all();
    }
    if (reaper_.joinable()) reaper_.join();
    logger_->info("pool '{}': shut down", options_.name);
  }

  Result<Lease> Acquire(std::optional<milliseconds> timeout, const std::string& principal) {
    const milliseconds wait = std::max(timeout.value_or(options_.acquire_timeout), milliseconds{0});
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
      return Lease(shared_from_this(), std::move(entry->sandbox), principal);
    }
    if (shutdown_) return Unavailable("is shut down");

    // Wait in line; a returned or started sandbox is handed to the first waiter directly.
    Waiter me;
    me.principal = &principal;
    const std::uint64_t failures_before = start_failures_total_;
    waiters_.push_back(&me);
    last_wait_began_ = Clock::now();
    work_cv_.notify_all();  // demand rose: a worker may start one
    while (!me.sandbox && !me.shut_down) {
      if (me.cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    if (me.sandbox) {
      return Lease(shared_from_this(), std::move(me.sandbox), principal);  // counted leased
    }
    if (me.shut_down) return Unavailable("was shut down while waiting");
    std::erase(waiters_, &me);
    ++acquire_timeouts_total_;
    work_cv_.notify_all();  // demand fell

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
                          std::to_string(options_.max_total) + ": " + std::to_string(leased_) +
                          " leased, " + std::to_string(starting_) + " starting, " +
                          std::to_string(destroying_) + " being destroyed)";
    if (last_start_error_ && consecutive_start_failures_ > 0) {
      message += "; last start error: " + last_start_error_->ToString();
    }
    return Error(ErrorCode::kBusy, std::move(message));
  }

  // The end of a lease. Runs on the releasing thread; never destroys under the lock.
  void Release(std::unique_ptr<PooledSandbox> sandbox, bool discarded,
               const std::string& principal) noexcept {
    // The sandbox is the releaser's alone until it is handed over, so ask it without the lock.
    const std::string reason = RetireReason(*sandbox, discarded);
    IdleEntry entry{std::move(sandbox), {}, {}, {}};
    if (reason.empty()) {
      entry.created_at = entry.sandbox->CreatedAt();
      entry.name = entry.sandbox->Name();
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
    if (!reason.empty() || shutdown_) {
      Dispose(lock, std::move(entry.sandbox));
    } else {
      entry.last_checked = Clock::now();
      Deliver(std::move(entry), /*hot=*/true);
    }
  }

  PoolStats Stats() const {
    std::lock_guard lock(mu_);
    PoolStats stats;
    stats.idle = static_cast<int>(idle_.size());
    stats.leased = leased_;
    stats.starting = starting_;
    stats.checking = checking_;
    stats.destroying = destroying_;
    stats.waiting = static_cast<int>(waiters_.size());
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
    std::unique_ptr<PooledSandbox> sandbox;
    Clock::time_point created_at;    // cached so no virtual call happens under the lock
    Clock::time_point last_checked;  // real steady time of the last health check or return
    std::string name;
  };

  // One blocked Acquire(); lives on its stack, linked in waiters_ while waiting.
  struct Waiter {
    std::condition_variable cv;
    std::unique_ptr<PooledSandbox> sandbox;  // set by the handing-over thread
    bool shut_down = false;
    const std::string* principal = nullptr;  // whom it waits for (the Acquire's argument)
  };

  Error Unavailable(const std::string& what) const {
    return Error(ErrorCode::kUnavailable, "pool '" + options_.name + "' " + what);
  }

  bool TooOld(Clock::time_point created_at, Clock::time_point now) const {
    return options_.max_age.count() > 0 && now - created_at >= options_.max_age;
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
      Dispose(lock, std::move(entry.sandbox));
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

  int TotalLocked() const {
    return static_cast<int>(idle_.size()) + leased_ + starting_ + checking_ + destroying_;
  }

  // Whether a worker should start a sandbox now (back-off aside): enough for min_idle plus
  // one per waiter, within max_total. Checked ones count as supply: they most likely return.
  // With refill_after_run, leased ones count towards min_idle too, except that one stays idle:
  // their replacements start once they are released (see PoolOptions::refill_after_run).
  bool StartNeededLocked() const {
    const int supply = static_cast<int>(idle_.size()) + starting_ + checking_;
    int idle_target = options_.min_idle;
    if (options_.refill_after_run) {
      idle_target = std::max(std::min(1, options_.min_idle), options_.min_idle - leased_);
    }
    const int demand = idle_target + static_cast<int>(waiters_.size());
    return !shutdown_ && supply < demand && TotalLocked() < options_.max_total;
  }

  // Fair sharing between principals: the waiter whose principal holds the fewest leases of
  // this pool, the longest-waiting among equals. So a principal holding every sandbox cannot
  // keep them while another waits: each one freed goes to the other first.
  std::deque<Waiter*>::iterator NextWaiterLocked() {
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
  // and on return.
  void Dispose(std::unique_lock<std::mutex>& lock, std::unique_ptr<PooledSandbox> sandbox) {
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

  void WorkerLoop() {
    std::unique_lock lock(mu_);
    while (true) {
      if (shutdown_) return;
      if (!StartNeededLocked()) {
        work_cv_.wait(lock);
        continue;
      }
      if (Clock::now() < backoff_until_) {
        work_cv_.wait_until(lock, backoff_until_);
        continue;
      }
      StartContext context;
      context.behind_demand =
          BehindDemand(!waiters_.empty(), idle_.empty(), last_wait_began_, Clock::now());
      if (context.behind_demand) ++starts_with_waiters_total_;
      ++starting_;
      lock.unlock();
      const auto begin = Clock::now();
      Result<std::unique_ptr<PooledSandbox>> created = CreateSandbox(context);
      const auto latency = duration_cast<microseconds>(Clock::now() - begin);
      if (options_.hooks.start_finished) options_.hooks.start_finished(created.ok(), latency);
      IdleEntry entry;
      std::optional<Error> start_error;
      if (created.ok()) {
        entry.sandbox = std::move(created).value();
        entry.created_at = entry.sandbox->CreatedAt();
        entry.name = entry.sandbox->Name();
        entry.last_checked = Clock::now();
        logger_->debug("pool '{}': started sandbox {} in {} ms", options_.name, entry.name,
                       latency.count() / 1000);
      } else {
        start_error = created.error();
      }
      lock.lock();
      --starting_;
      work_cv_.notify_all();
      if (start_error) {
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
      if (shutdown_) {
        Dispose(lock, std::move(entry.sandbox));
      } else {
        Deliver(std::move(entry), /*hot=*/true);
      }
    }
  }

  Result<std::unique_ptr<PooledSandbox>> CreateSandbox(const StartContext& context) {
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
    const milliseconds delay = StartBackoff(
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
    const milliseconds interval = options_.health_check_interval;
    std::unique_lock lock(mu_);
    while (!shutdown_) {
      if (interval.count() == 0) {  // maintenance disabled: only Shutdown wakes us
        maintenance_cv_.wait(lock);
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
        if (!healthy || shutdown_) {
          Dispose(lock, std::move(entry.sandbox));
        } else {
          entry.last_checked = Clock::now();
          Deliver(std::move(entry), /*hot=*/false);
        }
        continue;
      }

      // Sleep until the next check is due, or one interval when nothing is idle.
      auto next = now + interval;
      for (const IdleEntry& entry : idle_) next = std::min(next, entry.last_checked + interval);
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
      Dispose(lock, std::move(entry.sandbox));
    }
  }

  const PoolOptions options_;
  SandboxFactory& factory_;
  const std::shared_ptr<spdlog::logger> logger_;

  std::mutex lifecycle_mu_;  // serialises Start() and Shutdown(); taken before mu_
  std::thread reaper_;
  std::thread maintenance_;
  std::vector<std::thread> workers_;

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
  int leased_ = 0;
  int starting_ = 0;
  int checking_ = 0;
  int destroying_ = 0;

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
  microseconds start_latency_last_{0};
  microseconds start_latency_max_{0};
  microseconds start_latency_total_{0};
};

}  // namespace detail

// ---- Lease ----

Lease::Lease() noexcept = default;

Lease::Lease(std::shared_ptr<detail::PoolCore> core, std::unique_ptr<PooledSandbox> sandbox,
             std::string principal) noexcept
    : core_(std::move(core)), sandbox_(std::move(sandbox)), principal_(std::move(principal)) {}

Lease::Lease(Lease&& other) noexcept
    : core_(std::move(other.core_)),
      sandbox_(std::move(other.sandbox_)),
      principal_(std::move(other.principal_)),
      discarded_(std::exchange(other.discarded_, false)) {}

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Reset();
    core_ = std::move(other.core_);
    sandbox_ = std::move(other.sandbox_);
    principal_ = std::move(other.principal_);
    discarded_ = std::exchange(other.discarded_, false);
  }
  return *this;
}

Lease::~Lease() { Reset(); }

void Lease::Reset() noexcept {
  if (sandbox_ && core_) core_->Release(std::move(sandbox_), discarded_, principal_);
  sandbox_.reset();
  core_.reset();
  discarded_ = false;
}

// ---- WarmPool ----

WarmPool::WarmPool(PoolOptions options, SandboxFactory& factory,
                   std::shared_ptr<spdlog::logger> logger)
    : core_(std::make_shared<detail::PoolCore>(std::move(options), factory, std::move(logger))) {}

WarmPool::~WarmPool() { core_->Shutdown(); }

void WarmPool::Start() { core_->Start(); }

void WarmPool::Shutdown() { core_->Shutdown(); }

Result<Lease> WarmPool::Acquire(std::optional<milliseconds> timeout, const std::string& principal) {
  const auto begin = Clock::now();
  auto lease = core_->Acquire(timeout, principal);
  if (const auto& hook = core_->options().hooks.acquire_finished) {
    hook(lease.ok(), std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin));
  }
  return lease;
}

PoolStats WarmPool::stats() const { return core_->Stats(); }

const PoolOptions& WarmPool::options() const { return core_->options(); }

}  // namespace sandbox::pool
