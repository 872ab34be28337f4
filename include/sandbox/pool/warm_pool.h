// The warm pool: keeps started sandboxes of one pool configuration ready, lends them out as
// move-only leases (in the manner of sandbox2's SandboxPool), and replaces them when they are
// used up, too old, unhealthy or broken. Knows nothing of Docker: sandboxes come from a
// SandboxFactory<T> (pooled_sandbox.h), and a Lease<T> hands out the factory's own type T, so
// a holder uses its sandbox's full interface without a cast.
//
// Threads (all owned, all joined by Shutdown(); none detached):
//   - max_concurrent_starts start workers, the only callers of SandboxFactory::Create(); they
//     keep idle + starting >= min_idle + waiting acquirers (with refill_after_run: leased ones
//     count towards min_idle, but one stays idle), never past max_total, and back off
//     exponentially after failed starts;
//   - one maintenance thread: every health_check_interval it retires idle sandboxes past
//     max_age and health-checks idle sandboxes one at a time, outside the pool lock; with the
//     autoscaler on it also moves min_idle to the autoscaler's target (autoscale_policy.h);
//   - one reaper thread that destroys sandboxes (a Docker call that can take 100+ ms), so no
//     destruction happens under the pool lock or on a caller's Acquire/release path.
//
// Capacity: a sandbox counts towards max_total from the moment its start begins until its
// destruction has finished (idle + leased + starting + checking + destroying <= max_total), so
// at no instant do more than max_total sandboxes exist.
//
// Live tuning: min_idle, max_total and max_concurrent_starts change with Resize(), the autoscaler
// with SetAutoscale(); Drain() replaces every sandbox (idle ones at once, leased ones when their
// lease ends). They take effect under the pool's lock and wake the start workers. A lower
// max_concurrent_starts ends the workers beyond it (their threads are given back): idle ones at
// once, within Resize(), and one in a start when that start ends.
//
// Thread-safety: every public method of WarmPool may be called from any thread at any time,
// concurrently. A Lease is a single-owner handle (like std::unique_ptr): one thread at a time
// uses it, but it may be moved to and released on any thread, also after the pool is shut down
// or destroyed.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/pool/autoscale_policy.h"
#include "sandbox/pool/pooled_sandbox.h"

namespace sandbox::pool {

using config::PoolMode;

// How one pool behaves. Values out of range are clamped by WarmPool (see each field);
// config::Validate() already rejects them in configuration files.
// Observers for metrics, called on the thread that did the work and without the pool's lock;
// they must not call into the pool. Empty ones are skipped.
struct PoolHooks {
  // A sandbox start ended (SandboxFactory::Create returned): whether it succeeded, how long.
  std::function<void(bool ok, std::chrono::microseconds took)> start_finished;
  // An Acquire() ended: whether it got a sandbox, how long it waited (0 when one was idle).
  std::function<void(bool ok, std::chrono::microseconds waited)> acquire_finished;
};

struct PoolOptions {
  std::string name = "default";  // in logs and error messages
  // kRecycle: a sandbox serves many runs until it is used up; kFresh: one run per sandbox.
  PoolMode mode = PoolMode::kRecycle;
  int min_idle = 2;               // kept started and waiting; clamped to [0, max_total]
  int max_total = 8;              // idle + leased + starting + checking + destroying; >= 1
  int max_concurrent_starts = 2;  // start workers, i.e. starts in flight at once; >= 1
  // Whether a lent sandbox's replacement waits for its lease to end: leased sandboxes count
  // towards min_idle (the pool keeps max(1, min_idle - leased) idle, plus one per waiter), so
  // the start (a container boot: about a CPU-second of preloading) happens after the run
  // instead of competing with it for the CPU. Taking the last idle sandbox still starts one at
  // once. With min_idle 0 it changes nothing.
  bool refill_after_run = false;
  std::chrono::milliseconds acquire_timeout{10000};  // Acquire() default wait before kBusy
  // A sandbox older than this (by `clock`, against PooledSandbox::CreatedAt) is not lent out
  // again; <= 0 disables the limit.
  std::chrono::milliseconds max_age{std::chrono::hours(1)};
  int max_runs = 500;  // recycle: retired once RunCount() reaches it; <= 0 = no limit
  // Period of maintenance: each idle sandbox is health-checked this often, and idle sandboxes
  // past max_age are retired at this cadence. 0 disables both (Acquire and release still
  // enforce max_age).
  std::chrono::milliseconds health_check_interval{10000};
  // Back-off after failed starts: initial * 2^(consecutive failures - 1), capped at max; reset
  // by the next successful start. Keeps a broken image or engine from being hammered.
  std::chrono::milliseconds start_backoff_initial{250};
  std::chrono::milliseconds start_backoff_max{30000};
  // Off by default: min_idle is then fixed (until Resize). On, the autoscaler's target replaces
  // min_idle; the maintenance thread re-evaluates it every autoscale_tick.
  AutoscaleOptions autoscale;
  std::chrono::milliseconds autoscale_tick{250};
  // The time source for sandbox age; must be in the domain of PooledSandbox::CreatedAt().
  // Injectable for tests. Timeouts, back-off and health-check periods use the real
  // steady clock, since threads must actually wait for them.
  std::function<Clock::time_point()> clock = [] { return Clock::now(); };
  PoolHooks hooks;
};

// The options of a configured pool; health-check period and back-off keep their defaults.
PoolOptions PoolOptionsFromConfig(const config::PoolConfig& config);

// Whether a start begun now is behind demand (StartContext::behind_demand): requests wait, or
// none is idle and the last one began waiting within `window` before `now`.
bool BehindDemand(bool requests_waiting, bool idle_empty,
                  std::optional<Clock::time_point> last_wait_began, Clock::time_point now,
                  std::chrono::milliseconds window = std::chrono::seconds(1));

// The delay before the next start after `consecutive_failures` failed ones (0 for none):
// initial, 2*initial, 4*initial, ... capped at `max`. Deterministic (no jitter): one pool per
// process, so there is no herd of clients to spread out.
std::chrono::milliseconds StartBackoff(int consecutive_failures, std::chrono::milliseconds initial,
                                       std::chrono::milliseconds max);

// The sizes of a pool that may change while it runs (WarmPool::Resize). Clamped like
// PoolOptions' fields of the same names.
struct PoolSizes {
  int min_idle = 2;
  int max_total = 8;
  int max_concurrent_starts = 2;
  bool operator==(const PoolSizes&) const = default;
};

// The latest drain (WarmPool::Drain): how many sandboxes it found (idle, leased, starting,
// checking) and how many of them are gone since, whatever retired them.
struct DrainProgress {
  std::uint64_t drains_total = 0;  // drains begun since construction; 0: never drained
  int to_replace = 0;
  int replaced = 0;
  int remaining() const { return to_replace - replaced; }
  bool done() const { return remaining() <= 0; }
};

// A snapshot for metrics and the sandbox_info tool.
struct PoolStats {
  PoolSizes sizes;          // as set (Resize); min_idle is unused while autoscaled
  int min_idle_target = 0;  // the min_idle in effect: sizes.min_idle or the autoscaler's target
  bool autoscaled = false;  // the autoscaler sets min_idle_target
  int autoscale_peak = 0;   // the autoscaler's peak demand over its window (0 when off)
  DrainProgress drain;

  // Where the pool's sandboxes are now.
  int idle = 0;        // started and waiting to be lent
  int leased = 0;      // held by Lease objects
  int starting = 0;    // SandboxFactory::Create() in flight
  int checking = 0;    // taken out of the idle list for a health check
  int destroying = 0;  // queued for or in destruction
  int waiting = 0;     // Acquire() calls blocked for a sandbox
  // Start worker threads alive: max_concurrent_starts once started, more only while a worker
  // beyond a lowered max_concurrent_starts finishes its start.
  int start_workers = 0;

  // Counters since construction.
  std::uint64_t created_total = 0;
  std::uint64_t destroyed_total = 0;
  std::uint64_t start_failures_total = 0;
  std::uint64_t acquire_timeouts_total = 0;  // Acquire() calls that gave up at their deadline
  std::uint64_t health_check_failures_total = 0;
  std::uint64_t acquired_total = 0;
  // Starts begun while the pool was behind its demand (StartContext::behind_demand).
  std::uint64_t starts_with_waiters_total = 0;

  std::optional<Error> last_start_error;  // the most recent failed start, if any ever failed
  int consecutive_start_failures = 0;     // reset by a successful start

  // Latency of successful starts.
  std::uint64_t start_latency_count = 0;
  std::chrono::microseconds start_latency_last{0};
  std::chrono::microseconds start_latency_max{0};
  std::chrono::microseconds start_latency_total{0};
  std::chrono::microseconds start_latency_mean() const {
    return start_latency_count == 0
               ? std::chrono::microseconds{0}
               : start_latency_total / static_cast<std::int64_t>(start_latency_count);
  }

  int total() const { return idle + leased + starting + checking + destroying; }
};

namespace detail {

// SandboxFactory<T> as the pool's core calls it, T erased to PooledSandbox (FactoryOf<T>).
// Thread-safety: as SandboxFactory's.
class ErasedFactory {
 public:
  virtual ~ErasedFactory() = default;
  virtual Result<std::unique_ptr<PooledSandbox>> CreateFor(const StartContext& context) = 0;
  virtual void CancelStarts() = 0;
};

template <typename T>
class FactoryOf final : public ErasedFactory {
 public:
  explicit FactoryOf(SandboxFactory<T>& factory) : factory_(factory) {}
  Result<std::unique_ptr<PooledSandbox>> CreateFor(const StartContext& context) override {
    Result<std::unique_ptr<T>> created = factory_.CreateFor(context);
    if (!created.ok()) return created.error();
    return std::unique_ptr<PooledSandbox>(std::move(created).value());
  }
  void CancelStarts() override { factory_.CancelStarts(); }

 private:
  SandboxFactory<T>& factory_;
};

// A sandbox PoolCore::Acquire took out of the pool, before WarmPool<T> makes it a Lease<T>.
struct Lent {
  std::unique_ptr<PooledSandbox> sandbox;
  std::uint64_t generation = 0;  // the pool's drain generation when its start began
};

// The pool's state and logic, shared by a WarmPool<T> and its leases so that a lease may
// outlive the pool. Not a template: it holds PooledSandboxes, and WarmPool<T> and Lease<T> are
// thin typed wrappers that add the casts to T. So the logic is compiled once
// (src/pool/pool_core.cc) and a change to it rebuilds one object, not every file that holds a
// pool; the price is a virtual call per pool operation and a static_cast, safe because every
// sandbox of a WarmPool<T> came from its SandboxFactory<T>. The implementation, its states and
// transitions: src/pool/pool_core.h, src/pool/POOL_ARCHITECTURE.md.
// Thread-safety: as WarmPool's; every method may be called from any thread at any time.
class PoolCore {
 public:
  virtual ~PoolCore() = default;
  virtual void Start() = 0;
  virtual void Shutdown() = 0;
  virtual Result<Lent> Acquire(std::optional<std::chrono::milliseconds> timeout,
                               const std::string& principal) = 0;
  // The end of a lease: the sandbox comes back or is destroyed; never blocks on destruction
  // while the pool runs.
  virtual void Release(std::unique_ptr<PooledSandbox> sandbox, bool discarded,
                       const std::string& principal, std::uint64_t generation) noexcept = 0;
  virtual PoolSizes Resize(PoolSizes sizes) = 0;
  virtual PoolSizes sizes() const = 0;
  virtual AutoscaleOptions SetAutoscale(AutoscaleOptions options) = 0;
  virtual AutoscaleOptions autoscale() const = 0;
  virtual DrainProgress Drain() = 0;
  virtual int RetireIf(const std::function<bool(PooledSandbox&)>& pick, std::string_view why) = 0;
  virtual PoolStats Stats() const = 0;
  virtual const PoolOptions& options() const = 0;
};

// A pool's core, not started (pool_core.cc). `factory` is the core's own; the factory it wraps
// must outlive Shutdown(). `logger` may be null (then nothing is logged).
std::shared_ptr<PoolCore> MakePoolCore(PoolOptions options, std::unique_ptr<ErasedFactory> factory,
                                       std::shared_ptr<spdlog::logger> logger);

}  // namespace detail

template <typename T>
class WarmPool;

// A lent sandbox of type T (the type its pool's factory makes, so no holder ever casts).
// Move-only; empty after being moved from. When it ends (destructor, Reset(), or being
// move-assigned over) the sandbox goes back to the pool if the pool is in recycle mode, the
// sandbox is still Reusable(), was not Discard()ed, has served fewer than max_runs runs and is
// younger than max_age; otherwise it is destroyed on the pool's reaper thread and a replacement
// starts. Ending a lease never blocks on Docker, except after Shutdown(), when the sandbox is
// destroyed in the releasing thread.
template <typename T>
class Lease {
 public:
  Lease() noexcept = default;  // empty
  Lease(Lease&& other) noexcept
      : core_(std::move(other.core_)),
        sandbox_(std::move(other.sandbox_)),
        principal_(std::move(other.principal_)),
        generation_(other.generation_),
        discarded_(std::exchange(other.discarded_, false)) {}
  Lease& operator=(Lease&& other) noexcept {
    if (this != &other) {
      Reset();
      core_ = std::move(other.core_);
      sandbox_ = std::move(other.sandbox_);
      principal_ = std::move(other.principal_);
      generation_ = other.generation_;
      discarded_ = std::exchange(other.discarded_, false);
    }
    return *this;
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { Reset(); }

  // The sandbox; nullptr for an empty lease. Valid until the lease ends.
  T* get() const noexcept { return sandbox_.get(); }
  T* operator->() const noexcept { return sandbox_.get(); }
  T& operator*() const noexcept { return *sandbox_; }
  explicit operator bool() const noexcept { return sandbox_ != nullptr; }

  // Marks the sandbox to be destroyed rather than returned when the lease ends (e.g. the run
  // left it in a state the caller does not trust). It stays usable until then.
  void Discard() noexcept { discarded_ = true; }
  bool discarded() const noexcept { return discarded_; }

  // Ends the lease now (as the destructor would); the lease is empty afterwards.
  void Reset() noexcept;

 private:
  friend class WarmPool<T>;
  Lease(std::shared_ptr<detail::PoolCore> core, std::unique_ptr<T> sandbox, std::string principal,
        std::uint64_t generation) noexcept
      : core_(std::move(core)),
        sandbox_(std::move(sandbox)),
        principal_(std::move(principal)),
        generation_(generation) {}

  std::shared_ptr<detail::PoolCore> core_;  // keeps the pool's state alive for the release
  std::unique_ptr<T> sandbox_;
  std::string principal_;         // whom it was lent to (fair sharing)
  std::uint64_t generation_ = 0;  // the pool's drain generation when the sandbox's start began
  bool discarded_ = false;
};

// A pool of sandboxes of type T (a PooledSandbox), made by a SandboxFactory<T>. The pool's
// logic is the same for every T (detail::PoolCore); the type only reaches the leases.
template <typename T>
class WarmPool {
  static_assert(std::is_base_of_v<PooledSandbox, T>, "a pool holds PooledSandboxes");

 public:
  // `factory` must outlive Shutdown() (it is used only by the start workers, which Shutdown
  // joins). `logger` may be null (then nothing is logged). Starts no thread; call Start().
  WarmPool(PoolOptions options, SandboxFactory<T>& factory, std::shared_ptr<spdlog::logger> logger);
  // Calls Shutdown().
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // Starts the threads; the pool fills to min_idle in the background. Idempotent; a no-op
  // after Shutdown().
  void Start();

  // Stops maintenance and the start workers (first telling the factory to cancel the starts in
  // flight, SandboxFactory::CancelStarts(), then waiting for them), destroys every idle
  // sandbox, and fails pending and future Acquire() calls with kUnavailable. Leases still out
  // are not waited for: their sandboxes are destroyed when they are released. Idempotent;
  // concurrent callers all return once it is done.
  void Shutdown();

  // Lends a sandbox: an idle one at once if there is one, the most recently returned one that
  // is Prepared() (LIFO: its caches are warmest, and the least recently used ones age out or
  // get health-checked), else the most recently returned one; otherwise waits, in FIFO order
  // with other waiters, for one to be returned or started (a start is triggered if max_total
  // allows). Waits at most `timeout` (default acquire_timeout; 0 = do not wait). A sandbox that
  // becomes free goes to the waiter whose `principal` holds the fewest of this pool's leases
  // (arrival order among equals), so one principal cannot keep every sandbox while another
  // waits. Errors:
  //   kBusy         no sandbox within the timeout; the message names the pool and max_total;
  //   <start error> no sandbox within the timeout and a start failed meanwhile: that error's
  //                 code, with the pool named and the cause in the message;
  //   kUnavailable  the pool is not started or shut down (also for waiters at Shutdown()).
  Result<Lease<T>> Acquire(std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                           const std::string& principal = {});

  // Changes the sizes at once: a higher min_idle or max_total wakes the start workers, a higher
  // max_concurrent_starts adds workers and a lower one ends those beyond it; a lower min_idle or
  // max_total retires idle sandboxes beyond it (leased ones are never taken back; they are retired
  // when returned while the pool is over max_total). Values are clamped as PoolOptions';
  // config::ValidatePoolSizes says what a caller may ask for. Returns the sizes before the change.
  PoolSizes Resize(PoolSizes sizes);
  PoolSizes sizes() const;

  // Turns the autoscaler on (replacing its options; its demand history is kept) or off (then
  // min_idle is sizes().min_idle again). Returns the options before the change.
  AutoscaleOptions SetAutoscale(AutoscaleOptions options);
  AutoscaleOptions autoscale() const;

  // Replaces every sandbox: idle ones are retired at once, sandboxes starting or lent now are
  // retired when their start or lease ends; replacements start as min_idle and demand ask, so
  // they are created from the image as the engine has it by then. A drain begun while another
  // is in progress replaces the first's remaining sandboxes too.
  DrainProgress Drain();
  // Retires at once every idle sandbox `pick` selects (called under the pool's lock, once per
  // idle sandbox: it must not block; it may prepare the sandbox for its destruction, e.g. tell it
  // to leave its container to a later sweep). Replacements start as min_idle asks. Leased and
  // starting sandboxes are not touched. Returns how many were retired; `why` is for the log.
  int RetireIf(const std::function<bool(T&)>& pick, std::string_view why);

  PoolStats stats() const;
  // The options it was built with; the sizes and autoscaler there are the initial ones (sizes()
  // and autoscale() are current).
  const PoolOptions& options() const;
  const std::string& name() const { return options().name; }

 private:
  std::shared_ptr<detail::PoolCore> core_;
};

template <typename T>
void Lease<T>::Reset() noexcept {
  if (sandbox_ && core_) {
    core_->Release(std::unique_ptr<PooledSandbox>(std::move(sandbox_)), discarded_, principal_,
                   generation_);
  }
  sandbox_.reset();
  core_.reset();
  discarded_ = false;
}

template <typename T>
WarmPool<T>::WarmPool(PoolOptions options, SandboxFactory<T>& factory,
                      std::shared_ptr<spdlog::logger> logger)
    : core_(detail::MakePoolCore(
          std::move(options), std::make_unique<detail::FactoryOf<T>>(factory), std::move(logger))) {
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
  Result<Lease<T>> lease = [&]() -> Result<Lease<T>> {
    Result<detail::Lent> lent = core_->Acquire(timeout, principal);
    if (!lent.ok()) return lent.error();
    // Every sandbox of this pool came from its SandboxFactory<T>.
    return Lease<T>(core_, std::unique_ptr<T>(static_cast<T*>(lent->sandbox.release())), principal,
                    lent->generation);
  }();
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
  return core_->RetireIf([&pick](PooledSandbox& sandbox) { return pick(static_cast<T&>(sandbox)); },
                         why);
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
