// EngineHealth over fake engines: down after two failed pings in a row, back after three answers
// once the listeners take it back, draining kept apart from health. Short intervals; every wait
// is a bounded poll of a state, never a timed assertion.
#include "sandbox/engine/engine_health.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "support/fake_engine.h"

namespace sandbox::engine {
namespace {

using namespace std::chrono_literals;

bool Eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 1000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

class EngineHealthTest : public ::testing::Test {
 protected:
  EngineHealthTest() : health_({&e1_, &e2_}, HealthOptions{5ms, 50ms, 2, 3}) {
    health_.AddListener([this](const ContainerEngine& engine, bool up, const std::string& why) {
      std::lock_guard lock(mu_);
      heard_.push_back(engine.name() + (up ? " up" : " down: " + why));
      return accept_back_.load();
    });
  }
  std::vector<std::string> Heard() {
    std::lock_guard lock(mu_);
    return heard_;
  }

  testing::FakeEngine e1_{"e1"};
  testing::FakeEngine e2_{"e2"};
  std::mutex mu_;
  std::vector<std::string> heard_;
  std::atomic<bool> accept_back_{true};
  EngineHealth health_;
};

TEST_F(EngineHealthTest, EveryEngineStartsUpAndPlaceable) {
  EXPECT_TRUE(health_.Placeable("e1"));
  EXPECT_TRUE(health_.Placeable("e2"));
  EXPECT_FALSE(health_.Placeable("e9"));  // unknown
  ASSERT_EQ(health_.Statuses().size(), 2u);
  EXPECT_TRUE(health_.Statuses()[0].up);
}

TEST_F(EngineHealthTest, AnEngineThatStopsAnsweringGoesDownAndComesBack) {
  health_.Start();
  e2_.SetDown(true);
  ASSERT_TRUE(Eventually([&] { return !health_.Up("e2"); }));
  EXPECT_FALSE(health_.Placeable("e2"));
  EXPECT_TRUE(health_.Placeable("e1"));
  auto heard = Heard();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].rfind("e2 down: no answer to 2 pings in a row", 0), 0u) << heard[0];
  for (const auto& s : health_.Statuses()) {
    if (s.name == "e2") {
      EXPECT_NE(s.why.find("cannot reach the fake engine e2"), std::string::npos);
    }
  }

  // Answering again, but the listener refuses it back (its leftovers could not go): it stays
  // out, and is asked again at the next answers.
  accept_back_ = false;
  e2_.SetDown(false);
  ASSERT_TRUE(Eventually([&] { return Heard().size() >= 3; }));
  EXPECT_FALSE(health_.Up("e2"));
  accept_back_ = true;
  ASSERT_TRUE(Eventually([&] { return health_.Up("e2"); }));
  EXPECT_TRUE(health_.Placeable("e2"));
  EXPECT_EQ(Heard().back(), "e2 up");
  health_.Stop();
}

TEST_F(EngineHealthTest, DrainingKeepsAnEngineUpButUnplaceable) {
  EXPECT_TRUE(health_.SetDraining("e1", true));
  EXPECT_FALSE(health_.SetDraining("e9", true));
  EXPECT_TRUE(health_.Up("e1"));
  EXPECT_FALSE(health_.Placeable("e1"));
  EXPECT_TRUE(health_.Statuses()[0].draining);
  EXPECT_TRUE(health_.SetDraining("e1", false));
  EXPECT_TRUE(health_.Placeable("e1"));
}

}  // namespace
}  // namespace sandbox::engine
