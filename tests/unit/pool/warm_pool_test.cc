#include "sandbox/pool/warm_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "support/fake_factory.h"

namespace sandbox::pool {
namespace {

using namespace std::chrono_literals;
using testing::AsFake;
using testing::FakeClock;
using testing::FakeFactory;
using testing::FakeSandbox;
using Lease = ::sandbox::pool::Lease<FakeSandbox>;
using WarmPool = ::sandbox::pool::WarmPool<FakeSandbox>;

// Polls `pred` until it holds or a generous deadline passes: tests assert on states and
// counts, never on how fast the pool gets there.
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

int IdOf(const Lease& lease) { return AsFake(lease.get()).id(); }

class WarmPoolTest : public ::testing::Test {
 protected:
  // Small pools, maintenance off unless a test turns it on, quick back-off.
  PoolOptions Options() {
    PoolOptions options;
    options.name = "test-pool";
    options.min_idle = 2;
    options.max_total = 4;
    options.max_concurrent_starts = 2;
    options.acquire_timeout = 20s;
    options.max_age = 60s;
    options.max_runs = 100;
    options.health_check_interval = 0ms;
    options.start_backoff_initial = 10ms;
    options.start_backoff_max = 40ms;
    options.clock = [this] { return clock_.Now(); };
    return options;
  }

  WarmPool& StartPool(PoolOptions options) {
    pool_ = std::make_unique<WarmPool>(std::move(options), factory_, nullptr);
    pool_->Start();
    return *pool_;
  }

  bool WaitForIdle(int idle) {
    return WaitFor([&] {
      PoolStats s = pool_->stats();
      return s.idle == idle && s.starting == 0 && s.destroying == 0;
    });
  }

  void TearDown() override {
    pool_.reset();
    EXPECT_EQ(factory_.live(), 0) << "a sandbox leaked";
  }

  FakeClock clock_;
  FakeFactory factory_{&clock_};
  std::unique_ptr<WarmPool> pool_;
};

TEST(StartBackoffTest, DoublesFromInitialUpToTheCap) {
  EXPECT_EQ(StartBackoff(0, 250ms, 30s), 0ms);
  EXPECT_EQ(StartBackoff(1, 250ms, 30s), 250ms);
  EXPECT_EQ(StartBackoff(2, 250ms, 30s), 500ms);
  EXPECT_EQ(StartBackoff(3, 250ms, 30s), 1000ms);
  EXPECT_EQ(StartBackoff(8, 250ms, 30s), 30s);
  EXPECT_EQ(StartBackoff(1000000, 250ms, 30s), 30s);  // no overflow
}

// A client running back to back is between two requests for a moment: with none idle and a
// wait within the window, the pool counts as behind demand although nobody waits right now.
TEST(BehindDemandTest, WaitersOrARecentWaitWithNoneIdle) {
  const Clock::time_point t0{std::chrono::seconds(100)};
  EXPECT_TRUE(BehindDemand(true, false, std::nullopt, t0));
  EXPECT_TRUE(BehindDemand(true, true, std::nullopt, t0));
  EXPECT_FALSE(BehindDemand(false, true, std::nullopt, t0));  // nobody ever waited
  EXPECT_TRUE(BehindDemand(false, true, t0 - 200ms, t0));     // waited just now
  EXPECT_FALSE(BehindDemand(false, false, t0 - 200ms, t0));   // but one is idle
  EXPECT_FALSE(BehindDemand(false, true, t0 - 1s, t0));       // the window has passed
  EXPECT_TRUE(BehindDemand(false, true, t0 - 1s, t0, 2000ms));
}

TEST(PoolOptionsTest, FromConfigCopiesThePoolSettings) {
  config::PoolConfig cfg;
  cfg.name = "big";
  cfg.mode = config::PoolMode::kFresh;
  cfg.min_idle = 3;
  cfg.max_total = 9;
  cfg.max_concurrent_starts = 4;
  cfg.refill_after_run = true;
  cfg.acquire_timeout = 1234ms;
  cfg.max_age = 77s;
  cfg.max_runs = 12;
  PoolOptions options = PoolOptionsFromConfig(cfg);
  EXPECT_EQ(options.name, "big");
  EXPECT_EQ(options.mode, PoolMode::kFresh);
  EXPECT_EQ(options.min_idle, 3);
  EXPECT_EQ(options.max_total, 9);
  EXPECT_EQ(options.max_concurrent_starts, 4);
  EXPECT_TRUE(options.refill_after_run);
  EXPECT_EQ(options.acquire_timeout, 1234ms);
  EXPECT_EQ(options.max_age, 77s);
  EXPECT_EQ(options.max_runs, 12);
  EXPECT_EQ(options.health_check_interval, 10s);
  ASSERT_TRUE(options.clock);
}

TEST_F(WarmPoolTest, FillsToMinIdleAndStops) {
  PoolOptions options = Options();
  options.min_idle = 3;
  options.max_total = 5;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(3));
  PoolStats s = pool.stats();
  EXPECT_EQ(s.created_total, 3u);
  EXPECT_EQ(factory_.attempts(), 3);
  EXPECT_EQ(s.leased, 0);
  EXPECT_EQ(s.start_latency_count, 3u);
  EXPECT_FALSE(s.last_start_error.has_value());
}

TEST_F(WarmPoolTest, RetireIfRetiresThePickedIdleSandboxesAndRefills) {
  PoolOptions options = Options();
  options.min_idle = 3;
  options.max_total = 5;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(3));
  auto lease = pool.Acquire(std::nullopt, "alice");  // leased: never picked
  ASSERT_TRUE(lease.ok());
  const int leased_id = (*lease)->id();
  ASSERT_TRUE(WaitForIdle(3));
  std::vector<int> seen;
  const int retired = pool.RetireIf(
      [&seen](FakeSandbox& sandbox) {
        seen.push_back(sandbox.id());
        return sandbox.id() % 2 == 1;
      },
      "odd ones out");
  EXPECT_EQ(seen.size(), 3u);  // every idle one asked, the leased one not
  EXPECT_EQ(std::count(seen.begin(), seen.end(), leased_id), 0);
  EXPECT_EQ(retired, static_cast<int>(std::count_if(seen.begin(), seen.end(),
                                                    [](int id) { return id % 2 == 1; })));
  ASSERT_TRUE(WaitForIdle(3));  // refilled to min_idle
  EXPECT_EQ(pool.stats().destroyed_total, static_cast<std::uint64_t>(retired));
  EXPECT_EQ(pool.RetireIf([](FakeSandbox&) { return false; }, "none"), 0);
}

TEST_F(WarmPoolTest, AcquireBeforeStartIsUnavailable) {
  pool_ = std::make_unique<WarmPool>(Options(), factory_, nullptr);
  auto lease = pool_->Acquire(0ms);
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(factory_.attempts(), 0);
}

TEST_F(WarmPoolTest, AcquireReturnsAnIdleSandboxAtOnceAndRefills) {
  WarmPool& pool = StartPool(Options());
  ASSERT_TRUE(WaitForIdle(2));
  auto lease = pool.Acquire(0ms);  // no waiting allowed: must come from the idle list
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
  ASSERT_TRUE(*lease);
  EXPECT_TRUE(factory_.alive(IdOf(*lease)));
  EXPECT_EQ(pool.stats().leased, 1);
  ASSERT_TRUE(WaitForIdle(2));  // a replacement keeps min_idle
  EXPECT_EQ(pool.stats().created_total, 3u);
}

TEST_F(WarmPoolTest, RecycleModeReusesTheReturnedSandboxFirst) {
  PoolOptions options = Options();
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(1));
  auto first = pool.Acquire();
  ASSERT_TRUE(first.ok());
  const int id = IdOf(*first);
  ASSERT_TRUE(WaitForIdle(1));  // the replacement is idle below the one we return
  AsFake(first->get()).RecordRun();
  first->Reset();
  EXPECT_EQ(pool.stats().idle, 2);

  auto second = pool.Acquire(0ms);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(IdOf(*second), id);  // LIFO: the warm one
  EXPECT_EQ(AsFake(second->get()).RunCount(), 1);
  EXPECT_EQ(pool.stats().destroyed_total, 0u);
}

// A recycled sandbox is returned before it has prepared its next run; a request should get a
// prepared one instead of waiting for that preparation.
TEST_F(WarmPoolTest, AcquirePrefersAPreparedSandboxOverTheMostRecentOne) {
  PoolOptions options = Options();
  options.min_idle = 2;
  options.max_total = 2;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto first = pool.Acquire();
  ASSERT_TRUE(first.ok());
  const int returned = IdOf(*first);
  AsFake(first->get()).RecordRun();
  AsFake(first->get()).set_prepared(false);  // as after `done`, before the next `ready`
  first->Reset();
  ASSERT_EQ(pool.stats().idle, 2);

  auto second = pool.Acquire(0ms);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(IdOf(*second), returned);  // the prepared one, though returned longer ago
  EXPECT_EQ(AsFake(second->get()).RunCount(), 0);

  // Only the unprepared one is left: it is lent at once rather than waited for.
  auto third = pool.Acquire(0ms);
  ASSERT_TRUE(third.ok()) << third.error().ToString();
  EXPECT_EQ(IdOf(*third), returned);
  EXPECT_EQ(pool.stats().destroyed_total, 0u);
}

TEST_F(WarmPoolTest, SandboxFoundBrokenWhileIdleIsReplacedNotLent) {
  PoolOptions options = Options();
  options.min_idle = 2;
  options.max_total = 2;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto first = pool.Acquire();
  ASSERT_TRUE(first.ok());
  const int broken = IdOf(*first);
  first->Reset();  // on top of the idle list
  // As a harness sandbox whose zygote died while idle: Prepared() finds it unusable.
  ASSERT_TRUE(factory_.WithSandbox(broken, [](testing::FakeSandbox& s) { s.set_reusable(false); }));
  auto lease = pool.Acquire(0ms);
  ASSERT_TRUE(lease.ok());
  EXPECT_NE(IdOf(*lease), broken);
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(broken); }));
  EXPECT_EQ(pool.stats().destroyed_total, 1u);
}

TEST_F(WarmPoolTest, FreshModeDestroysAfterOneUseAndReplaces) {
  PoolOptions options = Options();
  options.mode = PoolMode::kFresh;
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(1));
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  const int id = IdOf(*lease);
  lease->Reset();
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(id) && pool.stats().destroyed_total == 1; }));
  ASSERT_TRUE(WaitForIdle(1));

  auto next = pool.Acquire();
  ASSERT_TRUE(next.ok());
  EXPECT_NE(IdOf(*next), id);
}

// refill_after_run: while another sandbox is idle, a lent one's replacement starts only when
// its lease ends, so the new sandbox's boot does not compete with the run.
TEST_F(WarmPoolTest, RefillAfterRunStartsTheReplacementWhenTheLeaseEnds) {
  PoolOptions options = Options();
  options.mode = PoolMode::kFresh;
  options.refill_after_run = true;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto lease = pool.Acquire(0ms);
  ASSERT_TRUE(lease.ok());
  // Nothing to wait for but time: a start would have begun within this.
  std::this_thread::sleep_for(200ms);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.starting, 0);
  EXPECT_EQ(s.created_total, 2u);
  EXPECT_EQ(s.idle, 1);
  lease->Reset();
  ASSERT_TRUE(WaitFor([&] {
    PoolStats t = pool.stats();
    return t.created_total == 3u && t.idle == 2 && t.destroying == 0;
  }));
}

// Taking the last idle sandbox still starts a replacement at once: one always stays idle.
TEST_F(WarmPoolTest, RefillAfterRunKeepsOneIdleWhileLeasesAreOut) {
  PoolOptions options = Options();
  options.mode = PoolMode::kFresh;
  options.refill_after_run = true;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto first = pool.Acquire(0ms);
  auto second = pool.Acquire(0ms);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_EQ(pool.stats().created_total, 3u);
  EXPECT_EQ(pool.stats().leased, 2);
  first->Reset();
  second->Reset();
  ASSERT_TRUE(WaitForIdle(2));  // back to min_idle once the leases end
  EXPECT_EQ(pool.stats().created_total, 4u);
}

// Without it (the recycle default), a lease's replacement starts while the lease is out.
TEST_F(WarmPoolTest, WithoutRefillAfterRunTheReplacementStartsAtLeaseTime) {
  PoolOptions options = Options();
  options.mode = PoolMode::kFresh;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto lease = pool.Acquire(0ms);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(WaitForIdle(2));
  EXPECT_EQ(pool.stats().created_total, 3u);
  EXPECT_EQ(pool.stats().leased, 1);
}

TEST_F(WarmPoolTest, RetiresAtMaxRuns) {
  PoolOptions options = Options();
  options.min_idle = 1;
  options.max_runs = 3;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(1));
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  const int id = IdOf(*lease);
  ASSERT_TRUE(WaitForIdle(1));  // the replacement is idle below the one we return
  AsFake(lease->get()).set_runs(2);
  lease->Reset();
  EXPECT_TRUE(factory_.alive(id));  // below max_runs: kept

  lease = pool.Acquire(0ms);
  ASSERT_TRUE(lease.ok());
  ASSERT_EQ(IdOf(*lease), id);
  AsFake(lease->get()).RecordRun();  // the third run
  lease->Reset();
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(id); }));
  EXPECT_EQ(pool.stats().destroyed_total, 1u);
}

TEST_F(WarmPoolTest, DestroysWhatIsNoLongerReusable) {
  PoolOptions options = Options();
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  const int id = IdOf(*lease);
  AsFake(lease->get()).set_reusable(false);  // e.g. its zygote died
  lease->Reset();
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(id); }));
  ASSERT_TRUE(WaitForIdle(1));
}

TEST_F(WarmPoolTest, RetiresAtMaxAgeWhenReleased) {
  PoolOptions options = Options();
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  const int id = IdOf(*lease);
  clock_.Advance(61s);
  lease->Reset();
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(id); }));
}

TEST_F(WarmPoolTest, AcquireNeverLendsAnExpiredIdleSandbox) {
  WarmPool& pool = StartPool(Options());  // maintenance off: only Acquire can notice
  ASSERT_TRUE(WaitForIdle(2));
  clock_.Advance(61s);
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
  EXPECT_GT(IdOf(*lease), 2);  // a new one, started after the clock moved
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(1) && !factory_.alive(2); }));
}

TEST_F(WarmPoolTest, MaintenanceRetiresExpiredIdleSandboxes) {
  PoolOptions options = Options();
  options.health_check_interval = 5ms;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  clock_.Advance(61s);
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(1) && !factory_.alive(2); }));
  ASSERT_TRUE(WaitForIdle(2));  // replaced
  EXPECT_EQ(pool.stats().created_total, 4u);
}

TEST_F(WarmPoolTest, UnhealthyIdleSandboxIsReplaced) {
  PoolOptions options = Options();
  options.health_check_interval = 5ms;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  ASSERT_TRUE(factory_.WithSandbox(1, [](testing::FakeSandbox& s) { s.set_healthy(false); }));
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(1); }));
  ASSERT_TRUE(WaitFor([&] { return pool.stats().idle == 2; }));
  PoolStats s = pool.stats();
  EXPECT_EQ(s.health_check_failures_total, 1u);
  EXPECT_TRUE(factory_.alive(2));
  int checks = 0;
  factory_.WithSandbox(2, [&](testing::FakeSandbox& sb) { checks = sb.health_checks(); });
  EXPECT_GT(checks, 0);
}

class WarmPoolConcurrencyTest : public WarmPoolTest,
                                public ::testing::WithParamInterface<PoolMode> {};

TEST_P(WarmPoolConcurrencyTest, NeverMoreThanMaxTotalAlive) {
  PoolOptions options = Options();
  options.mode = GetParam();
  options.max_total = 4;
  options.min_idle = 2;
  options.health_check_interval = 1ms;  // let maintenance race with everything too
  factory_.set_create_delay(1ms);
  WarmPool& pool = StartPool(options);

  constexpr int kThreads = 16;
  constexpr int kRounds = 20;
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> max_seen_total{0};
  std::atomic<bool> stop{false};
  std::thread monitor([&] {
    while (!stop) {
      int total = pool.stats().total();
      int seen = max_seen_total.load();
      while (total > seen && !max_seen_total.compare_exchange_weak(seen, total)) {
      }
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        auto lease = pool.Acquire(60s);
        if (!lease.ok()) {
          ++failed;
          continue;
        }
        AsFake(lease->get()).RecordRun();
        if (i % 7 == 3) lease->Discard();
        ++ok;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  stop = true;
  monitor.join();

  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(ok.load(), kThreads * kRounds);
  EXPECT_LE(factory_.max_live(), 4);
  EXPECT_LE(max_seen_total.load(), 4);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.leased, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.acquired_total, static_cast<std::uint64_t>(kThreads * kRounds));
}

INSTANTIATE_TEST_SUITE_P(Modes, WarmPoolConcurrencyTest,
                         ::testing::Values(PoolMode::kRecycle, PoolMode::kFresh),
                         [](const ::testing::TestParamInfo<PoolMode>& param_info) {
                           return param_info.param == PoolMode::kRecycle ? "Recycle" : "Fresh";
                         });

TEST_F(WarmPoolTest, AcquireTimesOutWithBusyNamingThePool) {
  PoolOptions options = Options();
  options.name = "tiny";
  options.max_total = 1;
  options.min_idle = 1;
  options.acquire_timeout = 30ms;
  WarmPool& pool = StartPool(options);
  auto held = pool.Acquire();
  ASSERT_TRUE(held.ok());

  auto busy = pool.Acquire();  // the default timeout, from the options
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code(), ErrorCode::kBusy);
  EXPECT_NE(busy.error().message().find("'tiny'"), std::string::npos) << busy.error().message();
  EXPECT_NE(busy.error().message().find("max_total 1"), std::string::npos);

  auto now = pool.Acquire(0ms);
  ASSERT_FALSE(now.ok());
  EXPECT_EQ(now.error().code(), ErrorCode::kBusy);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.acquire_timeouts_total, 2u);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.created_total, 1u);  // max_total held: no start was attempted
}

TEST_F(WarmPoolTest, WaiterGetsAReturnedSandbox) {
  PoolOptions options = Options();
  options.max_total = 1;
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  auto held = pool.Acquire();
  ASSERT_TRUE(held.ok());
  const int id = IdOf(*held);
  auto waiter = std::async(std::launch::async, [&] { return pool.Acquire(60s); });
  ASSERT_TRUE(WaitFor([&] { return pool.stats().waiting == 1; }));
  held->Reset();
  auto lease = waiter.get();
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(IdOf(*lease), id);
}

// Fair sharing: alice holds both sandboxes and waits for a third; bob arrives later. The first
// sandbox freed goes to bob (he holds none), not to alice's earlier request.
TEST_F(WarmPoolTest, AFreedSandboxGoesToTheLeastServedPrincipal) {
  PoolOptions options = Options();
  options.max_total = 2;
  options.min_idle = 2;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto a1 = pool.Acquire(std::nullopt, "alice");
  auto a2 = pool.Acquire(std::nullopt, "alice");
  ASSERT_TRUE(a1.ok());
  ASSERT_TRUE(a2.ok());
  auto alice_waits = std::async(std::launch::async, [&] { return pool.Acquire(60s, "alice"); });
  ASSERT_TRUE(WaitFor([&] { return pool.stats().waiting == 1; }));
  auto bob_waits = std::async(std::launch::async, [&] { return pool.Acquire(60s, "bob"); });
  ASSERT_TRUE(WaitFor([&] { return pool.stats().waiting == 2; }));
  const int freed = IdOf(*a1);
  a1->Reset();
  auto bob = bob_waits.get();
  ASSERT_TRUE(bob.ok());
  EXPECT_EQ(IdOf(*bob), freed);
  EXPECT_EQ(pool.stats().waiting, 1);  // alice still waits
  // Between equals (alice holds one, bob holds one) the earlier waiter is served.
  a2->Reset();
  auto alice = alice_waits.get();
  ASSERT_TRUE(alice.ok());
}

// The factory learns whether a start is for requests already waiting (a fresh pool then starts
// without its preload): not when filling to min_idle, yes when a waiter is queued.
TEST_F(WarmPoolTest, StartsTellTheFactoryWhetherRequestsWait) {
  PoolOptions options = Options();
  options.mode = PoolMode::kFresh;
  options.min_idle = 1;
  options.max_total = 2;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(1));
  auto first = pool.Acquire();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(WaitForIdle(1));  // the replacement, with nobody waiting
  auto second = pool.Acquire();
  ASSERT_TRUE(second.ok());  // now at max_total: the next request waits
  auto waiter = std::async(std::launch::async, [&] { return pool.Acquire(60s); });
  ASSERT_TRUE(WaitFor([&] { return pool.stats().waiting == 1; }));
  first->Reset();  // fresh: destroyed, which frees room for a start while the waiter waits
  auto lease = waiter.get();
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
  const std::vector<bool> expected = {false, false, true};
  const auto got = factory_.waiting_at_start();
  ASSERT_GE(got.size(), 3u);
  EXPECT_EQ(std::vector<bool>(got.begin(), got.begin() + 3), expected);
  EXPECT_GE(pool.stats().starts_with_waiters_total, 1u);
}

TEST_F(WarmPoolTest, FactoryFailureIsSurfacedToTheWaiter) {
  factory_.set_fail(true);
  PoolOptions options = Options();
  options.min_idle = 0;
  WarmPool& pool = StartPool(options);
  auto lease = pool.Acquire(500ms);
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.error().code(), ErrorCode::kNotFound);  // the start's error, not kBusy
  EXPECT_NE(lease.error().message().find("'test-pool'"), std::string::npos);
  EXPECT_NE(lease.error().message().find("No such image"), std::string::npos)
      << lease.error().message();
  PoolStats s = pool.stats();
  EXPECT_GE(s.start_failures_total, 1u);
  ASSERT_TRUE(s.last_start_error.has_value());
  EXPECT_EQ(s.last_start_error->code(), ErrorCode::kNotFound);
}

TEST_F(WarmPoolTest, FailingStartsBackOffAndRecover) {
  factory_.set_fail(true);
  PoolOptions options = Options();
  options.start_backoff_initial = 20ms;
  options.start_backoff_max = 80ms;
  WarmPool& pool = StartPool(options);
  std::this_thread::sleep_for(400ms);  // the window over which attempts are counted
  const int attempts = factory_.attempts();
  EXPECT_GE(attempts, 1);
  // Back-off allows about a dozen (two workers, 20/40/80/80... ms apart); a spinning pool
  // would make thousands.
  EXPECT_LE(attempts, 40);
  EXPECT_GT(pool.stats().consecutive_start_failures, 0);

  factory_.set_fail(false);  // the image is fixed
  ASSERT_TRUE(WaitForIdle(2));
  PoolStats s = pool.stats();
  EXPECT_EQ(s.consecutive_start_failures, 0);
  EXPECT_EQ(s.created_total, 2u);
  EXPECT_TRUE(s.last_start_error.has_value());  // kept for the operator
}

TEST_F(WarmPoolTest, WaiterIsServedOnceTheFactoryHeals) {
  factory_.set_fail(true);
  PoolOptions options = Options();
  options.min_idle = 0;
  WarmPool& pool = StartPool(options);
  auto waiter = std::async(std::launch::async, [&] { return pool.Acquire(60s); });
  ASSERT_TRUE(WaitFor([&] { return pool.stats().start_failures_total >= 2; }));
  factory_.set_fail(false);
  auto lease = waiter.get();
  ASSERT_TRUE(lease.ok()) << lease.error().ToString();
}

TEST_F(WarmPoolTest, DiscardedSandboxIsDestroyedAndReplaced) {
  PoolOptions options = Options();
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  const int id = IdOf(*lease);
  lease->Discard();
  EXPECT_TRUE(lease->discarded());
  EXPECT_TRUE(factory_.alive(id));  // usable until the lease ends
  lease->Reset();
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(id); }));
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_EQ(pool.stats().destroyed_total, 1u);
}

TEST_F(WarmPoolTest, LeaseMovesOwnership) {
  PoolOptions options = Options();
  options.min_idle = 2;
  options.max_total = 2;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto acquired = pool.Acquire();
  ASSERT_TRUE(acquired.ok());
  Lease a = std::move(acquired).value();
  const int id = IdOf(a);

  Lease b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(a.get(), nullptr);
  ASSERT_TRUE(b);
  EXPECT_EQ(IdOf(b), id);
  EXPECT_EQ(pool.stats().leased, 1);

  Lease c;
  EXPECT_FALSE(c);
  c = std::move(b);
  EXPECT_EQ(IdOf(c), id);
  EXPECT_EQ(pool.stats().leased, 1);

  // Move-assigning over a held lease ends that lease first.
  auto other = pool.Acquire(0ms);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(pool.stats().leased, 2);
  c = std::move(other).value();
  EXPECT_NE(IdOf(c), id);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.leased, 1);
  EXPECT_EQ(s.idle, 1);  // the first one came back

  // Discard travels with the lease.
  c.Discard();
  Lease d(std::move(c));
  EXPECT_TRUE(d.discarded());
  const int discarded_id = IdOf(d);
  d.Reset();
  d.Reset();  // ending an empty lease does nothing
  ASSERT_TRUE(WaitFor([&] { return !factory_.alive(discarded_id); }));
  EXPECT_EQ(pool.stats().leased, 0);
}

TEST_F(WarmPoolTest, ShutdownFailsPendingAndFutureAcquires) {
  PoolOptions options = Options();
  options.max_total = 1;
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  auto held = pool.Acquire();
  ASSERT_TRUE(held.ok());
  auto waiter = std::async(std::launch::async, [&] { return pool.Acquire(60s); });
  ASSERT_TRUE(WaitFor([&] { return pool.stats().waiting == 1; }));
  pool.Shutdown();
  auto pending = waiter.get();
  ASSERT_FALSE(pending.ok());
  EXPECT_EQ(pending.error().code(), ErrorCode::kUnavailable);
  auto later = pool.Acquire();
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(later.error().message().find("shut down"), std::string::npos);
  EXPECT_EQ(factory_.live(), 1);  // the leased one
  held->Reset();                  // destroyed on release
  EXPECT_EQ(factory_.live(), 0);
  pool.Shutdown();  // idempotent
}

TEST_F(WarmPoolTest, ShutdownDestroysIdleAndOutstandingLeasesOnRelease) {
  PoolOptions options = Options();
  options.min_idle = 3;
  options.max_total = 3;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(3));
  auto a = pool.Acquire();
  auto b = pool.Acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  pool.Shutdown();
  EXPECT_EQ(factory_.live(), 2);  // the idle one is gone
  PoolStats s = pool.stats();
  EXPECT_EQ(s.idle, 0);
  EXPECT_EQ(s.leased, 2);
  a->Reset();
  EXPECT_EQ(factory_.live(), 1);
  pool_.reset();  // the pool object goes; the lease must still end cleanly
  b->Reset();
  EXPECT_EQ(factory_.live(), 0);
}

TEST_F(WarmPoolTest, ShutdownWaitsForAStartInFlight) {
  factory_.BlockCreate(true);
  PoolOptions options = Options();
  options.min_idle = 1;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitFor([&] { return factory_.attempts() == 1; }));
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    pool.Shutdown();
    done = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(done.load());  // Create() is still blocked, so Shutdown cannot have finished
  factory_.BlockCreate(false);
  stopper.join();
  EXPECT_EQ(factory_.created(), 1);
  EXPECT_EQ(factory_.live(), 0);  // the late sandbox was destroyed, not leaked
}

TEST_F(WarmPoolTest, ShutdownCancelsStartsInFlightInsteadOfWaiting) {
  factory_.BlockCreateUntilCancelled();  // starts that would never end on their own
  PoolOptions options = Options();
  options.min_idle = 2;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitFor([&] { return factory_.attempts() == 2; }));
  EXPECT_EQ(pool.stats().starting, 2);
  // Without CancelStarts() this would never return; the wait only keeps a failure from hanging.
  auto stopped = std::async(std::launch::async, [&] { pool.Shutdown(); });
  const bool returned = stopped.wait_for(60s) == std::future_status::ready;
  if (!returned) factory_.CancelStarts();  // let the test end
  stopped.get();
  ASSERT_TRUE(returned) << "Shutdown waited for the starts instead of cancelling them";
  EXPECT_EQ(factory_.cancel_calls(), 1);
  EXPECT_EQ(factory_.created(), 0);
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.starting, 0);
  EXPECT_EQ(s.created_total, 0u);
  pool.Shutdown();  // idempotent: the factory is not told twice
  EXPECT_EQ(factory_.cancel_calls(), 1);
}

TEST_F(WarmPoolTest, DestructionDoesNotBlockReleaseOrAcquire) {
  PoolOptions options = Options();
  options.mode = PoolMode::kFresh;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(2));
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  factory_.BlockDestroy(true);  // destruction now hangs like a slow Docker call

  auto release = std::async(std::launch::async, [&] { lease->Reset(); });
  const bool released = release.wait_for(10s) == std::future_status::ready;
  auto acquire = std::async(std::launch::async, [&] { return pool.Acquire(10s); });
  const bool acquired = acquire.wait_for(10s) == std::future_status::ready;
  const PoolStats s = pool.stats();  // would deadlock if destruction held the pool lock
  factory_.BlockDestroy(false);
  EXPECT_TRUE(released);
  ASSERT_TRUE(acquired);
  auto next = acquire.get();
  EXPECT_TRUE(next.ok());
  EXPECT_EQ(s.destroying, 1);
  ASSERT_TRUE(WaitFor([&] { return pool.stats().destroyed_total == 1; }));
}

}  // namespace
}  // namespace sandbox::pool

namespace sandbox::pool {
namespace {

using testing::FakeClock;

// ---- Live tuning: Resize, Drain, the autoscaler ----

class WarmPoolTuningTest : public WarmPoolTest {};

TEST_F(WarmPoolTuningTest, RaisingMinIdleFillsToIt) {
  WarmPool& pool = StartPool(Options());
  ASSERT_TRUE(WaitForIdle(2));
  const PoolSizes before = pool.Resize({4, 4, 2});
  EXPECT_EQ(before, (PoolSizes{2, 4, 2}));
  EXPECT_EQ(pool.sizes(), (PoolSizes{4, 4, 2}));
  ASSERT_TRUE(WaitForIdle(4));
  EXPECT_EQ(pool.stats().min_idle_target, 4);
}

TEST_F(WarmPoolTuningTest, LoweringMinIdleRetiresIdleBeyondIt) {
  PoolOptions options = Options();
  options.min_idle = 4;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(4));
  pool.Resize({1, 4, 2});
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_EQ(factory_.destroyed(), 3);
  EXPECT_EQ(factory_.created(), 4);  // nothing restarted
}

TEST_F(WarmPoolTuningTest, LoweringMaxTotalRetiresReturnedSandboxesAboveIt) {
  PoolOptions options = Options();
  options.min_idle = 0;
  WarmPool& pool = StartPool(options);
  std::vector<Lease> leases;
  for (int i = 0; i < 4; ++i) {
    auto lease = pool.Acquire();
    ASSERT_TRUE(lease.ok());
    leases.push_back(std::move(*lease));
  }
  pool.Resize({0, 2, 2});
  leases.clear();  // all four come back; two are over the new max_total
  ASSERT_TRUE(WaitFor([&] {
    PoolStats s = pool.stats();
    return s.idle == 2 && s.destroying == 0 && s.leased == 0;
  }));
  EXPECT_EQ(factory_.destroyed(), 2);
  EXPECT_EQ(factory_.live(), 2);
}

TEST_F(WarmPoolTuningTest, RaisingMaxConcurrentStartsAllowsMoreStartsAtOnce) {
  PoolOptions options = Options();
  options.min_idle = 3;
  options.max_concurrent_starts = 1;
  factory_.BlockCreate(true);
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitFor([&] { return factory_.attempts() == 1; }));
  EXPECT_EQ(pool.stats().starting, 1);
  pool.Resize({3, 4, 3});
  ASSERT_TRUE(WaitFor([&] { return factory_.attempts() == 3; }));
  EXPECT_EQ(pool.stats().starting, 3);
  factory_.BlockCreate(false);
  ASSERT_TRUE(WaitForIdle(3));
}

TEST_F(WarmPoolTuningTest, LoweringMaxConcurrentStartsLimitsStartsInFlight) {
  PoolOptions options = Options();
  options.min_idle = 0;
  options.max_concurrent_starts = 3;  // three start workers exist from here on
  WarmPool& pool = StartPool(options);
  pool.Resize({0, 4, 1});
  factory_.BlockCreate(true);
  pool.Resize({4, 4, 1});
  ASSERT_TRUE(WaitFor([&] { return factory_.attempts() == 1; }));
  factory_.BlockCreate(false);
  ASSERT_TRUE(WaitForIdle(4));
  EXPECT_EQ(factory_.max_in_create(), 1);  // the other workers waited for the one start
}

// Threads of this process (the pool's and the test's).
int TaskCount() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

// Issue 34: raising max_concurrent_starts started a thread per start, and lowering it kept them
// all. Workers beyond a lowered value end; idle ones within Resize() itself.
TEST_F(WarmPoolTuningTest, LoweringMaxConcurrentStartsGivesTheWorkersThreadsBack) {
  PoolOptions options = Options();
  options.min_idle = 0;
  WarmPool& pool = StartPool(options);
  EXPECT_EQ(pool.stats().start_workers, 2);
  const int before = TaskCount();
  pool.Resize({0, 4, 40});
  EXPECT_EQ(pool.stats().start_workers, 40);
  EXPECT_EQ(TaskCount(), before + 38);
  pool.Resize({0, 4, 2});
  EXPECT_EQ(pool.stats().start_workers, 2);
  EXPECT_EQ(TaskCount(), before);
  // And they come back when it rises again.
  pool.Resize({0, 4, 5});
  EXPECT_EQ(pool.stats().start_workers, 5);
  EXPECT_EQ(TaskCount(), before + 3);
}

// A worker beyond the new value that is in a start finishes it, then ends.
TEST_F(WarmPoolTuningTest, AWorkerInAStartEndsWhenItsStartEnds) {
  PoolOptions options = Options();
  options.min_idle = 3;
  options.max_concurrent_starts = 3;
  factory_.BlockCreate(true);
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitFor([&] { return factory_.attempts() == 3; }));
  pool.Resize({3, 4, 1});
  EXPECT_EQ(pool.stats().start_workers, 3);  // all three are in a start
  factory_.BlockCreate(false);
  ASSERT_TRUE(WaitFor([&] { return pool.stats().start_workers == 1; }));
  ASSERT_TRUE(WaitForIdle(3));
  pool.Resize({3, 4, 2});  // the ended one is joined and a new one takes its place
  EXPECT_EQ(pool.stats().start_workers, 2);
}

TEST_F(WarmPoolTuningTest, DrainReplacesIdleAtOnceAndLeasedWhenReturned) {
  WarmPool& pool = StartPool(Options());
  ASSERT_TRUE(WaitForIdle(2));
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  const int leased_id = IdOf(*lease);
  ASSERT_TRUE(WaitForIdle(2));  // refilled
  const int last_old_id = factory_.created();

  const DrainProgress started = pool.Drain();
  EXPECT_EQ(started.drains_total, 1u);
  EXPECT_EQ(started.to_replace, 3);  // two idle, one leased
  EXPECT_EQ(started.replaced, 2);    // the idle ones, at once
  EXPECT_FALSE(started.done());
  ASSERT_TRUE(WaitForIdle(2));  // replacements
  for (int id = 1; id <= last_old_id; ++id) {
    if (id != leased_id) {
      EXPECT_FALSE(factory_.alive(id)) << id;
    }
  }
  EXPECT_TRUE(factory_.alive(leased_id));  // its run goes on
  EXPECT_EQ(pool.stats().drain.remaining(), 1);

  lease->Reset();  // recycle mode would keep it; a drain retires it
  ASSERT_TRUE(WaitFor([&] { return pool.stats().drain.done(); }));
  EXPECT_EQ(pool.stats().drain.replaced, 3);
  ASSERT_TRUE(WaitForIdle(2));
  EXPECT_FALSE(factory_.alive(leased_id));
  EXPECT_EQ(factory_.live(), 2);
}

TEST_F(WarmPoolTuningTest, DrainRetiresAStartBegunBeforeIt) {
  PoolOptions options = Options();
  options.min_idle = 1;
  factory_.BlockCreate(true);
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitFor([&] { return pool.stats().starting == 1; }));
  const DrainProgress started = pool.Drain();
  EXPECT_EQ(started.to_replace, 1);
  factory_.BlockCreate(false);
  ASSERT_TRUE(WaitFor([&] { return pool.stats().drain.done(); }));
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_FALSE(factory_.alive(1));  // begun before the drain: may be of the old image
  EXPECT_EQ(factory_.created(), 2);
}

TEST_F(WarmPoolTuningTest, ShrinkingRetiresLeanSandboxesFirst) {
  PoolOptions options = Options();
  options.min_idle = 3;
  options.max_total = 3;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(3));
  std::vector<Lease> leases;
  for (int i = 0; i < 3; ++i) {
    auto lease = pool.Acquire();
    ASSERT_TRUE(lease.ok());
    leases.push_back(std::move(*lease));
  }
  AsFake(leases[1].get()).set_lean(true);
  const int a = IdOf(leases[0]);
  const int b = IdOf(leases[1]);
  const int c = IdOf(leases[2]);
  leases.clear();  // returned in order a, b, c: a is the least recently used
  ASSERT_TRUE(WaitForIdle(3));
  pool.Resize({1, 3, 2});
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_FALSE(factory_.alive(b));  // lean: first to go
  EXPECT_FALSE(factory_.alive(a));  // then the least recently used
  EXPECT_TRUE(factory_.alive(c));
}

TEST_F(WarmPoolTuningTest, AutoscalerGrowsWithDemandAndShrinksAfterTheWindow) {
  PoolOptions options = Options();
  options.max_total = 6;
  options.autoscale.enabled = true;
  options.autoscale.min_idle_floor = 1;
  options.autoscale.min_idle_ceiling = 4;
  options.autoscale.headroom = 1;
  options.autoscale.window = 10s;
  options.autoscale_tick = 1ms;
  WarmPool& pool = StartPool(options);
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_TRUE(pool.stats().autoscaled);
  EXPECT_EQ(pool.stats().min_idle_target, 1);

  auto first = pool.Acquire();
  auto second = pool.Acquire();
  ASSERT_TRUE(first.ok() && second.ok());
  // Demand 2: target 3 (idle + lent), so one idle beyond the two lent: started before any
  // request had to wait.
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_EQ(pool.stats().min_idle_target, 3);
  EXPECT_EQ(pool.stats().autoscale_peak, 2);
  EXPECT_EQ(factory_.created(), 3);

  first->Reset();
  second->Reset();
  ASSERT_TRUE(WaitForIdle(3));  // returned, and kept: the window still holds the peak
  EXPECT_EQ(pool.stats().min_idle_target, 3);
  EXPECT_EQ(factory_.created(), 3);  // no churn: nothing retired, nothing started

  clock_.Advance(11s);  // the peak has left the window
  ASSERT_TRUE(WaitForIdle(1));
  EXPECT_EQ(pool.stats().min_idle_target, 1);
  EXPECT_EQ(pool.stats().autoscale_peak, 0);
}

TEST_F(WarmPoolTuningTest, AutoscalerCanBeTurnedOnAndOff) {
  WarmPool& pool = StartPool(Options());
  ASSERT_TRUE(WaitForIdle(2));
  AutoscaleOptions autoscale;
  autoscale.enabled = true;
  autoscale.min_idle_floor = 3;
  autoscale.min_idle_ceiling = 4;
  pool.SetAutoscale(autoscale);
  ASSERT_TRUE(WaitForIdle(3));  // the floor
  EXPECT_TRUE(pool.autoscale().enabled);
  pool.SetAutoscale(AutoscaleOptions{});
  ASSERT_TRUE(WaitForIdle(2));  // min_idle as set
  EXPECT_FALSE(pool.stats().autoscaled);
}

TEST_F(WarmPoolTuningTest, AutoscalerNeverGoesAboveMaxTotal) {
  PoolOptions options = Options();
  options.max_total = 3;
  options.autoscale.enabled = true;
  options.autoscale.min_idle_floor = 0;
  options.autoscale.headroom = 2;
  WarmPool& pool = StartPool(options);
  std::vector<Lease> leases;
  for (int i = 0; i < 3; ++i) {
    auto lease = pool.Acquire();
    ASSERT_TRUE(lease.ok());
    leases.push_back(std::move(*lease));
  }
  ASSERT_TRUE(WaitFor([&] { return pool.stats().min_idle_target == 3; }));
  EXPECT_EQ(factory_.max_live(), 3);
  leases.clear();
}

}  // namespace
}  // namespace sandbox::pool
