// PlacingMaker: a pool's starts placed over several engines, counted per engine, an engine that
// fails passed over with a back-off, adoption and removal by the engine that listed a container;
// and a real WarmPool over it keeping min_idle across engines. Fakes at the seams: one
// FakeSandbox maker per engine (support/fake_sandbox.h), FakeEngines for the names.
#include "sandbox/service/placing_maker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "support/fake_engine.h"
#include "support/fake_sandbox.h"

namespace sandbox::service {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// One engine's maker: FakeSandboxes that fail to start while `fail` is set.
class EngineFake final : public SandboxMaker {
 public:
  explicit EngineFake(testing::FakeWorld& world) : world_(world) {}
  Result<std::unique_ptr<runner::Sandbox>> Create() override {
    ++creates;
    if (fail) return Error(ErrorCode::kUnavailable, "the engine refused the start");
    if (cancel) return Error(ErrorCode::kCancelled, "the sandbox start was cancelled");
    auto sandbox = std::make_unique<testing::FakeSandbox>(world_, "default", std::string());
    made.push_back(sandbox->container_id());
    return std::unique_ptr<runner::Sandbox>(std::move(sandbox));
  }
  Result<std::unique_ptr<runner::Sandbox>> StartForSession(const std::string& id) override {
    (void)id;
    return Create();
  }
  Result<std::unique_ptr<runner::Sandbox>> Adopt(const engine::Listed& container) override {
    adopted.push_back(container.id);
    return std::unique_ptr<runner::Sandbox>(
        std::make_unique<testing::FakeSandbox>(world_, "default", std::string()));
  }
  void Remove(const engine::Listed& container) override { removed.push_back(container.id); }
  void CancelStarts() override { cancelled = true; }
  config::Limits limits() const override { return limits_; }
  void SetLimits(const config::Limits& limits) override { limits_ = limits; }
  std::string python_version() const override { return version; }

  std::atomic<bool> fail{false};
  std::atomic<bool> cancel{false};
  std::atomic<int> creates{0};
  bool cancelled = false;
  std::string version;
  std::vector<std::string> made;  // container ids of the sandboxes made here
  std::vector<std::string> adopted;
  std::vector<std::string> removed;

 private:
  testing::FakeWorld& world_;
  config::Limits limits_;
};

// Engines e1..eN, a maker on each, and the PlacingMaker over them (a settable clock).
class PlacingMakerTest : public ::testing::Test {
 protected:
  void Build(int n, int max_concurrent_starts = 2, const engine::EngineHealth* health = nullptr) {
    std::vector<EngineMaker> makers;
    for (int i = 1; i <= n; ++i) {
      engines_.push_back(std::make_unique<testing::FakeEngine>("e" + std::to_string(i)));
      auto fake = std::make_unique<EngineFake>(world_);
      fakes_.push_back(fake.get());
      makers.push_back({engines_.back().get(), std::move(fake)});
    }
    PlacingOptions options;
    options.pool = "default";
    options.max_concurrent_starts = max_concurrent_starts;
    options.seed = 42;
    options.clock = [this] { return now_; };
    options.health = health;
    maker_ = std::make_unique<PlacingMaker>(std::move(makers), std::move(options), nullptr);
  }
  // A started sandbox (a failed start fails the test).
  std::unique_ptr<runner::Sandbox> Make() {
    auto made = maker_->Create();
    EXPECT_TRUE(made.ok()) << made.error().ToString();
    if (!made.ok()) return nullptr;
    return std::move(made).value();
  }
  // Sandboxes alive per engine, by name.
  std::map<std::string, int> Alive() const {
    std::map<std::string, int> out;
    for (const auto& p : maker_->placements()) out[p.engine] = p.alive;
    return out;
  }
  EnginePlacement Of(const std::string& engine) const {
    for (const auto& p : maker_->placements()) {
      if (p.engine == engine) return p;
    }
    return {};
  }

  testing::FakeWorld world_;
  std::vector<std::unique_ptr<testing::FakeEngine>> engines_;
  std::vector<EngineFake*> fakes_;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::time_point(1h);
  std::unique_ptr<PlacingMaker> maker_;
};

TEST_F(PlacingMakerTest, StartsSpreadEvenlyOverTheEngines) {
  Build(3);
  std::vector<std::unique_ptr<runner::Sandbox>> held;
  for (int i = 0; i < 30; ++i) {
    auto made = maker_->Create();
    ASSERT_TRUE(made.ok()) << made.error().ToString();
    held.push_back(std::move(*made));
  }
  EXPECT_EQ(Alive(), (std::map<std::string, int>{{"e1", 10}, {"e2", 10}, {"e3", 10}}));
  EXPECT_EQ(world_.live(), 30);
}

TEST_F(PlacingMakerTest, ADestroyedSandboxFreesItsEngine) {
  Build(2);
  std::vector<std::unique_ptr<runner::Sandbox>> held;
  for (int i = 0; i < 4; ++i) held.push_back(Make());
  ASSERT_EQ(Alive(), (std::map<std::string, int>{{"e1", 2}, {"e2", 2}}));
  // Every sandbox of e1 destroyed: the next two starts go there.
  const auto& on_e1 = fakes_[0]->made;
  std::erase_if(held, [&on_e1](const auto& s) {
    return std::find(on_e1.begin(), on_e1.end(), s->container_id()) != on_e1.end();
  });
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(Alive(), (std::map<std::string, int>{{"e1", 0}, {"e2", 2}}));
  for (int i = 0; i < 2; ++i) held.push_back(Make());
  EXPECT_EQ(Alive(), (std::map<std::string, int>{{"e1", 2}, {"e2", 2}}));
  EXPECT_EQ(fakes_[0]->creates, 4);
  EXPECT_EQ(fakes_[1]->creates, 2);
}

TEST_F(PlacingMakerTest, AFailingEngineIsPassedOverAndTheStartGoesElsewhere) {
  Build(2);
  fakes_[1]->fail = true;
  std::vector<std::unique_ptr<runner::Sandbox>> held;
  for (int i = 0; i < 6; ++i) {
    auto made = maker_->Create();
    ASSERT_TRUE(made.ok()) << made.error().ToString();
    held.push_back(std::move(*made));
  }
  EXPECT_EQ(Alive(), (std::map<std::string, int>{{"e1", 6}, {"e2", 0}}));
  // Tried once, then passed over while backing off.
  EXPECT_EQ(fakes_[1]->creates, 1);
  EXPECT_TRUE(Of("e2").backing_off);
  EXPECT_EQ(Of("e2").failures_in_row, 1);
  EXPECT_THAT(Of("e2").last_error, HasSubstr("refused"));

  // Its back-off over and the engine well again, it gets the next starts (it holds fewest).
  now_ += 1001ms;
  fakes_[1]->fail = false;
  held.push_back(Make());
  EXPECT_EQ(Of("e2").alive, 1);
  EXPECT_FALSE(Of("e2").backing_off);
  EXPECT_EQ(Of("e2").failures_in_row, 0);
  EXPECT_EQ(Of("e2").last_error, "");
}

TEST_F(PlacingMakerTest, TheBackOffDoublesUpToItsBound) {
  Build(2);
  fakes_[1]->fail = true;
  std::vector<std::unique_ptr<runner::Sandbox>> held;
  // Each round: the back-off just passed, e2 holds fewest and is tried again, and fails.
  const std::vector<std::chrono::milliseconds> pauses = {1s, 2s, 4s, 8s, 16s, 30s, 30s};
  held.push_back(Make());  // e2 fails (1 s), e1 serves
  for (std::size_t i = 1; i < pauses.size(); ++i) {
    now_ += pauses[i - 1] - 1ms;
    held.push_back(Make());
    EXPECT_EQ(fakes_[1]->creates, static_cast<int>(i)) << "still backing off after round " << i;
    now_ += 1ms;
    held.push_back(Make());
    EXPECT_EQ(fakes_[1]->creates, static_cast<int>(i) + 1) << "round " << i;
    EXPECT_EQ(Of("e2").failures_in_row, static_cast<int>(i) + 1);
  }
  EXPECT_EQ(Of("e2").alive, 0);
}

TEST_F(PlacingMakerTest, EveryEngineFailingIsAnErrorNamingTheLast) {
  Build(2);
  fakes_[0]->fail = true;
  fakes_[1]->fail = true;
  auto made = maker_->Create();
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(made.error().message(), HasSubstr("refused"));
  EXPECT_THAT(made.error().message(), HasSubstr("engine e"));
  EXPECT_EQ(fakes_[0]->creates + fakes_[1]->creates, 2);  // each tried once
  // Both backing off: the next start still tries one (the one whose pause ends first).
  auto again = maker_->Create();
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(fakes_[0]->creates + fakes_[1]->creates, 4);
}

TEST_F(PlacingMakerTest, ACancelledStartSaysNothingOfTheEngine) {
  Build(2);
  fakes_[0]->cancel = true;
  fakes_[1]->cancel = true;
  auto made = maker_->Create();
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error().code(), ErrorCode::kCancelled);
  EXPECT_EQ(fakes_[0]->creates + fakes_[1]->creates, 1);  // no second engine tried
  for (const auto& p : maker_->placements()) {
    EXPECT_EQ(p.failures_in_row, 0) << p.engine;
    EXPECT_FALSE(p.backing_off) << p.engine;
  }
  maker_->CancelStarts();
  EXPECT_TRUE(fakes_[0]->cancelled);
  EXPECT_TRUE(fakes_[1]->cancelled);
}

TEST_F(PlacingMakerTest, AdoptAndRemoveGoToTheEngineThatListedTheContainer) {
  Build(3);
  engine::Listed on_e2;
  on_e2.id = "c2";
  on_e2.engine = "e2";
  auto adopted = maker_->Adopt(on_e2);
  ASSERT_TRUE(adopted.ok());
  EXPECT_EQ(fakes_[1]->adopted, std::vector<std::string>{"c2"});
  EXPECT_EQ(Of("e2").alive, 1);
  adopted->reset();
  EXPECT_EQ(Of("e2").alive, 0);

  engine::Listed on_e3;
  on_e3.id = "c3";
  on_e3.engine = "e3";
  maker_->Remove(on_e3);
  EXPECT_EQ(fakes_[2]->removed, std::vector<std::string>{"c3"});
  EXPECT_TRUE(fakes_[0]->removed.empty());

  engine::Listed elsewhere;
  elsewhere.id = "c9";
  elsewhere.engine = "e9";
  auto refused = maker_->Adopt(elsewhere);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kNotFound);
  EXPECT_THAT(refused.error().message(), HasSubstr("e9"));
}

TEST_F(PlacingMakerTest, AnEngineThatIsDownOrDrainingGetsNoStartAtAll) {
  testing::FakeEngine e1("e1");
  testing::FakeEngine e2("e2");
  engine::EngineHealth health({&e1, &e2}, engine::HealthOptions{});  // not started: both up
  Build(2, 2, &health);
  health.SetDraining("e2", true);
  std::vector<std::unique_ptr<runner::Sandbox>> held;
  for (int i = 0; i < 4; ++i) held.push_back(Make());
  EXPECT_EQ(Alive(), (std::map<std::string, int>{{"e1", 4}, {"e2", 0}}));
  EXPECT_EQ(fakes_[1]->creates, 0);
  // e1 failing too: not even the last resort goes to the draining engine.
  fakes_[0]->fail = true;
  health.SetDraining("e1", true);
  auto none = maker_->Create();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(none.error().message(), HasSubstr("no engine that takes new sandboxes now"));
  EXPECT_THAT(none.error().message(), HasSubstr("e1 draining, e2 draining"));
  EXPECT_EQ(fakes_[1]->creates, 0);
  health.SetDraining("e2", false);
  held.push_back(Make());
  EXPECT_EQ(Of("e2").alive, 1);
}

TEST_F(PlacingMakerTest, LimitsGoToEveryEngineAndTheVersionIsTheFirstKnown) {
  Build(2);
  config::Limits limits;
  limits.timeout_s = 7;
  maker_->SetLimits(limits);
  EXPECT_EQ(fakes_[0]->limits().timeout_s, 7);
  EXPECT_EQ(fakes_[1]->limits().timeout_s, 7);
  EXPECT_EQ(maker_->python_version(), "");
  fakes_[1]->version = "3.11";
  EXPECT_EQ(maker_->python_version(), "3.11");
}

TEST_F(PlacingMakerTest, AWarmPoolKeepsItsMinIdleAcrossTheEngines) {
  Build(2);
  pool::PoolOptions options;
  options.name = "default";
  options.min_idle = 4;
  options.max_total = 8;
  options.max_concurrent_starts = 2;
  SandboxPool pool(options, *maker_, nullptr);
  pool.Start();
  for (int i = 0; i < 500 && pool.stats().idle < 4; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(pool.stats().idle, 4);
  EXPECT_EQ(Alive(), (std::map<std::string, int>{{"e1", 2}, {"e2", 2}}));
  {
    auto lease = pool.Acquire(std::nullopt, "alice");
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ(world_.live(), Of("e1").alive + Of("e2").alive);
  }
  pool.Shutdown();
  EXPECT_EQ(Alive(), (std::map<std::string, int>{{"e1", 0}, {"e2", 0}}));
}

}  // namespace
}  // namespace sandbox::service
