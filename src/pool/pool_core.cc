#include "pool_core.h"

#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace sandbox::pool::detail {
namespace {

using std::chrono::milliseconds;

// Clamps values out of range (see PoolOptions' fields); never fails.
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

// A logger that drops everything when `logger` is null.
std::shared_ptr<spdlog::logger> OrNullLogger(std::shared_ptr<spdlog::logger> logger) {
  if (logger) return logger;
  return std::make_shared<spdlog::logger>("pool", std::make_shared<spdlog::sinks::null_sink_mt>());
}

}  // namespace

std::shared_ptr<PoolCore> MakePoolCore(PoolOptions options, std::unique_ptr<ErasedFactory> factory,
                                       std::shared_ptr<spdlog::logger> logger) {
  return std::make_shared<PoolCoreImpl>(std::move(options), std::move(factory), std::move(logger));
}

PoolCoreImpl::PoolCoreImpl(PoolOptions options, std::unique_ptr<ErasedFactory> factory,
                           std::shared_ptr<spdlog::logger> logger)
    : options_(Clamped(std::move(options))),
      factory_(std::move(factory)),
      logger_(OrNullLogger(std::move(logger))),
      sizes_{options_.min_idle, options_.max_total, options_.max_concurrent_starts},
      target_(options_.min_idle) {
  if (options_.autoscale.enabled) {
    autoscaler_.emplace(options_.autoscale);
    target_ = autoscaler_->Target(options_.clock(), sizes_.max_total);
  }
}

PoolCoreImpl::~PoolCoreImpl() { Shutdown(); }

void PoolCoreImpl::Start() {
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

PoolSizes PoolCoreImpl::sizes() const {
  std::lock_guard lock(mu_);
  return sizes_;
}

PoolSizes PoolCoreImpl::Resize(PoolSizes sizes) {
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

AutoscaleOptions PoolCoreImpl::SetAutoscale(AutoscaleOptions options) {
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

AutoscaleOptions PoolCoreImpl::autoscale() const {
  std::lock_guard lock(mu_);
  return autoscaler_ ? autoscaler_->options() : AutoscaleOptions{};
}

DrainProgress PoolCoreImpl::Drain() {
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

int PoolCoreImpl::RetireIf(const std::function<bool(PooledSandbox&)>& pick, std::string_view why) {
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

void PoolCoreImpl::Shutdown() {
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
  factory_->CancelStarts();
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

Result<Lent> PoolCoreImpl::Acquire(std::optional<std::chrono::milliseconds> timeout,
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
    return Lent{std::move(entry->sandbox), entry->generation};
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
    return Lent{std::move(me.sandbox), me.generation};
  }
  if (me.shut_down) return Unavailable("was shut down while waiting");
  std::erase(waiters_, &me);
  ++acquire_timeouts_total_;
  work_cv_.notify_all();  // demand fell
  UpdateTargetLocked(lock);

  if (start_failures_total_ != failures_before && last_start_error_) {
    const Error& cause = *last_start_error_;
    return Error(cause.code(),
                 "pool '" + options_.name + "': no sandbox within " + std::to_string(wait.count()) +
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

void PoolCoreImpl::Release(std::unique_ptr<PooledSandbox> sandbox, bool discarded,
                           const std::string& principal, std::uint64_t generation) noexcept {
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

PoolStats PoolCoreImpl::Stats() const {
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

Error PoolCoreImpl::Unavailable(const std::string& what) const {
  return Error(ErrorCode::kUnavailable, "pool '" + options_.name + "' " + what);
}

bool PoolCoreImpl::TooOld(Clock::time_point created_at, Clock::time_point now) const {
  return options_.max_age.count() > 0 && now - created_at >= options_.max_age;
}

DrainProgress PoolCoreImpl::DrainLocked() const {
  return DrainProgress{drains_total_, drain_to_replace_, drain_replaced_};
}

int PoolCoreImpl::AutoscaledIdleLocked() const { return std::max(0, target_ - DemandLocked()); }

void PoolCoreImpl::SyncWorkers(int count) {
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

void PoolCoreImpl::UpdateTargetLocked(std::unique_lock<std::mutex>& lock) {
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
        "pool '{}': autoscale: min_idle {} -> {} (peak demand {} in the last {} s)", options_.name,
        before, target, autoscale_peak_,
        std::chrono::duration_cast<std::chrono::seconds>(autoscaler_->options().window).count());
  }
  if (target > before) {
    work_cv_.notify_all();
  } else if (!shutdown_) {
    TrimIdleLocked(lock, autoscaler_ ? AutoscaledIdleLocked() : target,
                   "the pool's min_idle went down");
  }
}

void PoolCoreImpl::TrimIdleLocked(std::unique_lock<std::mutex>& lock, int keep, const char* why) {
  while (static_cast<int>(idle_.size()) > std::max(keep, 0) && !shutdown_) {
    auto victim =
        std::find_if(idle_.begin(), idle_.end(), [](const IdleEntry& entry) { return entry.lean; });
    if (victim == idle_.end()) victim = idle_.begin();
    IdleEntry entry = std::move(*victim);
    idle_.erase(victim);
    logger_->debug("pool '{}': retiring idle sandbox {}{}: {}", options_.name, entry.name,
                   entry.lean ? " (started lean)" : "", why);
    Dispose(lock, std::move(entry.sandbox), entry.generation);
  }
}

void PoolCoreImpl::TrimOverMaxTotalLocked(std::unique_lock<std::mutex>& lock) {
  const int over = KeptLocked() - sizes_.max_total;
  if (over > 0) {
    TrimIdleLocked(lock, static_cast<int>(idle_.size()) - over, "the pool is over max_total");
  }
}

std::string PoolCoreImpl::RetireReason(const PooledSandbox& sandbox, bool discarded) const {
  if (discarded) return "discarded by its holder";
  if (options_.mode == PoolMode::kFresh) return "fresh mode: one run per sandbox";
  if (!sandbox.Reusable()) return "not reusable";
  if (options_.max_runs > 0 && sandbox.RunCount() >= options_.max_runs) {
    return "served max_runs " + std::to_string(options_.max_runs) + " runs";
  }
  if (TooOld(sandbox.CreatedAt(), options_.clock())) return "older than max_age";
  return {};
}

std::optional<PoolCoreImpl::IdleEntry> PoolCoreImpl::TakeIdleLocked(
    std::unique_lock<std::mutex>& lock) {
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

bool PoolCoreImpl::CheckPrepared(PooledSandbox& sandbox) {
  try {
    return sandbox.Prepared();
  } catch (...) {
    return false;
  }
}

bool PoolCoreImpl::StartNeededLocked() const {
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

std::deque<PoolCoreImpl::Waiter*>::iterator PoolCoreImpl::NextWaiterLocked() {
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

int PoolCoreImpl::LeasedByLocked(const std::string& principal) const {
  auto it = leased_by_.find(principal);
  return it == leased_by_.end() ? 0 : it->second;
}

void PoolCoreImpl::Deliver(IdleEntry entry, bool hot) {
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

void PoolCoreImpl::Dispose(std::unique_lock<std::mutex>& lock,
                           std::unique_ptr<PooledSandbox> sandbox, std::uint64_t generation) {
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

void PoolCoreImpl::FinishDestroyLocked() {
  --destroying_;
  ++destroyed_total_;
  work_cv_.notify_all();  // capacity freed: a replacement may start
}

void PoolCoreImpl::ReaperLoop() {
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

void PoolCoreImpl::WorkerLoop(std::size_t index) {
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
    Result<std::unique_ptr<PooledSandbox>> created = CreateSandbox(context);
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

Result<std::unique_ptr<PooledSandbox>> PoolCoreImpl::CreateSandbox(const StartContext& context) {
  try {
    auto created = factory_->CreateFor(context);
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

void PoolCoreImpl::OnStartFailureLocked(const Error& error) {
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

bool PoolCoreImpl::CheckHealth(PooledSandbox& sandbox) {
  try {
    return sandbox.Healthy();
  } catch (...) {
    return false;
  }
}

void PoolCoreImpl::MaintenanceLoop() {
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

void PoolCoreImpl::RetireOldIdleLocked(std::unique_lock<std::mutex>& lock) {
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

}  // namespace sandbox::pool::detail
