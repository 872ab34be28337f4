// BuildPools: the one place the configuration becomes the engine's pools, for runs and for
// sessions, over fake makers.
#include "sandbox/service/sandbox_pools.h"

#include <gtest/gtest.h>

#include "support/fake_maker.h"

namespace sandbox::service {
namespace {

using namespace std::chrono_literals;

config::Config TwoPools() {
  config::Config c;
  c.instance_id = "pools-test";
  c.pools[0].name = "default";
  c.pools[0].min_idle = 3;
  c.pools[0].max_total = 9;
  c.pools[0].max_concurrent_starts = 4;
  config::PoolConfig other = c.pools[0];
  other.name = "other";
  c.pools.push_back(other);
  c.sessions.max_total = 5;
  c.sessions.warm = 2;
  c.sessions.restart_grace = 120s;
  return c;
}

TEST(SandboxPoolsTest, RunPoolsAreAsConfigured) {
  const auto config = TwoPools();
  ServiceOptions options;
  options.container_labels = {{"owner", "me"}};
  testing::FakeWorld world;
  auto pools = BuildPools(config, PoolPurpose::kRuns, options, testing::FakeMakers(world), nullptr);
  ASSERT_EQ(pools.size(), 2u);
  const auto& entry = pools.at("default");
  EXPECT_EQ(entry.config, &config.pools[0]);
  EXPECT_EQ(entry.pool->name(), "default");
  EXPECT_EQ(entry.pool->sizes().min_idle, 3);
  EXPECT_EQ(entry.pool->sizes().max_total, 9);
  EXPECT_EQ(entry.pool->options().mode, config.pools[0].mode);
  const auto setup = SetupFor(config, config.pools[0], PoolPurpose::kRuns, options);
  EXPECT_FALSE(setup.session);
  EXPECT_EQ(setup.watchdog, 0ms);
  EXPECT_EQ(setup.instance_id, "pools-test");
  EXPECT_EQ(setup.extra_labels.at("owner"), "me");
  EXPECT_EQ(world.started(), 0);  // nothing starts before the pools do
}

TEST(SandboxPoolsTest, SessionPoolsLendOnceAndKeepWarmOnesForTheDefaultPoolOnly) {
  const auto config = TwoPools();
  std::vector<std::string> hooked;
  ServiceOptions options;
  options.pool_hooks = [&hooked](const std::string& name) {
    hooked.push_back(name);
    return pool::PoolHooks{};
  };
  testing::FakeWorld world;
  auto pools =
      BuildPools(config, PoolPurpose::kSessions, options, testing::FakeMakers(world), nullptr);
  const auto& def = *pools.at("default").pool;
  const auto& other = *pools.at("other").pool;
  EXPECT_EQ(def.name(), "default/sessions");
  EXPECT_EQ(def.options().mode, config::PoolMode::kFresh);
  EXPECT_EQ(def.sizes().max_total, 5);
  EXPECT_EQ(def.sizes().min_idle, 2);
  EXPECT_EQ(def.sizes().max_concurrent_starts, 4);
  EXPECT_GE(def.options().acquire_timeout, 60s);
  EXPECT_EQ(other.sizes().min_idle, 0);
  EXPECT_EQ(hooked, (std::vector<std::string>{"default/sessions", "other/sessions"}));

  const auto setup = SetupFor(config, config.pools[0], PoolPurpose::kSessions, options);
  EXPECT_TRUE(setup.session);
  // A warm container's watchdog is short whatever the grace; health checks keep it alive.
  EXPECT_EQ(setup.watchdog, 30s);
  EXPECT_LE(def.options().health_check_interval, 10s);
}

TEST(SandboxPoolsTest, WithoutARestartGraceSessionSandboxesHaveNoWatchdog) {
  auto config = TwoPools();
  config.sessions.restart_grace = 0s;
  const auto setup = SetupFor(config, config.pools[0], PoolPurpose::kSessions, {});
  EXPECT_EQ(setup.watchdog, 0ms);
}

}  // namespace
}  // namespace sandbox::service
