// PoolTuner against fake pools: a change passes exactly when config validation would pass it,
// names the field when it does not, is logged and counted.
#include "sandbox/admin/pool_tuner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "unit/admin/fake_pools.h"

namespace sandbox::admin {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class PoolTunerTest : public ::testing::Test {
 protected:
  PoolTunerTest()
      : logger_(std::make_shared<spdlog::logger>(
            "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_))),
        tuner_(pools_, PoolBounds{}, &metrics_, logger_) {}

  std::ostringstream log_;
  testing::FakePools pools_;
  metrics::Metrics metrics_{metrics::MetricsOptions{"test"}};
  std::shared_ptr<spdlog::logger> logger_;
  PoolTuner tuner_;
};

TEST_F(PoolTunerTest, DescribesAPool) {
  auto pool = tuner_.Describe("default");
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)["min_idle"], 2);
  EXPECT_EQ((*pool)["max_total"], 8);
  EXPECT_EQ((*pool)["limits"]["timeout_s"], 30.0);
  EXPECT_EQ((*pool)["autoscale"]["enabled"], false);
  EXPECT_EQ((*pool)["drain"]["done"], true);
  EXPECT_EQ(tuner_.List()["pools"].size(), 1u);
  EXPECT_EQ(tuner_.Describe("nope").error().code(), ErrorCode::kNotFound);
}

TEST_F(PoolTunerTest, AppliesSizesLogsWhoAndCounts) {
  auto changed = tuner_.Patch("default", json{{"min_idle", 4}, {"max_total", 10}}, "ops");
  ASSERT_TRUE(changed.ok()) << changed.error().ToString();
  EXPECT_EQ((*changed)["min_idle"], 4);
  EXPECT_EQ((*changed)["max_total"], 10);
  EXPECT_EQ(pools_.Settings("default")->sizes, (pool::PoolSizes{4, 10, 2}));
  EXPECT_THAT(log_.str(), HasSubstr("ops (api) changed pool 'default' min_idle: 2 -> 4"));
  EXPECT_THAT(log_.str(), HasSubstr("max_total: 8 -> 10"));
  const std::string text = metrics_.Render({});
  EXPECT_THAT(
      text,
      HasSubstr(R"(sandbox_admin_changes_total{field="min_idle",pool="default",source="api"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(R"(sandbox_admin_changes_total{field="max_total",pool="default",source="api"} 1)"));
}

TEST_F(PoolTunerTest, RefusesWhatConfigValidationRefusesNamingTheField) {
  struct Case {
    json change;
    std::string names;
  };
  const std::vector<Case> cases = {
      {json{{"min_idle", 9}}, "min_idle: must not exceed max_total"},
      {json{{"min_idle", -1}}, "min_idle: must not be negative"},
      {json{{"max_total", 0}}, "max_total: must be at least 1"},
      {json{{"max_concurrent_starts", 0}}, "max_concurrent_starts: must be at least 1"},
      {json{{"limits", {{"timeout_s", 301}}}}, "limits.timeout_s: exceeds max_limits.timeout_s"},
      {json{{"limits", {{"memory_bytes", 1024}}}}, "limits.memory_bytes: must be at least 16 MiB"},
      {json{{"limits", {{"timeout_s", "long"}}}}, "limits.timeout_s: expected a number"},
      {json{{"limits", {{"walltime", 5}}}}, "limits.walltime: unknown key"},
      {json{{"image", "other"}}, "image: not a tunable setting"},
      {json{{"min_idle", "4"}}, "min_idle: expected an integer"},
      {json{{"autoscale", {{"enabled", true}, {"min_idle_floor", 5}, {"min_idle_ceiling", 3}}}},
       "autoscale.min_idle_floor: must not exceed min_idle_ceiling"},
      {json{{"autoscale", {{"enabled", true}, {"min_idle_ceiling", 9}}}},
       "autoscale.min_idle_ceiling: must not exceed max_total"},
      {json::object(), "nothing to change"},
      {json::array(), "JSON object"},
  };
  for (const auto& c : cases) {
    auto changed = tuner_.Patch("default", c.change, "ops");
    ASSERT_FALSE(changed.ok()) << c.change.dump();
    EXPECT_EQ(changed.error().code(), ErrorCode::kInvalidArgument) << c.change.dump();
    EXPECT_THAT(changed.error().message(), HasSubstr(c.names)) << c.change.dump();
  }
  EXPECT_EQ(pools_.applied(), 0);
  EXPECT_EQ(pools_.Settings("default")->sizes, (pool::PoolSizes{2, 8, 2}));
}

// The finding of issue 34: PATCH max_concurrent_starts 1500 started 1,500 threads, and the API
// took up to 1,000,000. Each size has its bound (config/bounds.h), and the refusal names the
// key, the value and the bound.
TEST_F(PoolTunerTest, RefusesSizesAboveTheirBoundsNamingKeyValueAndBound) {
  struct Case {
    json change;
    std::string names;
  };
  const std::vector<Case> cases = {
      {json{{"max_concurrent_starts", 1500}}, "max_concurrent_starts: 1500 is above its bound " +
                                                  std::to_string(config::kMaxConcurrentStarts)},
      {json{{"max_concurrent_starts", 1000000}}, "1000000 is above its bound"},
      {json{{"max_total", 5000}},
       "max_total: 5000 is above its bound " + std::to_string(config::kMaxPoolTotal)},
      {json{{"max_concurrent_starts", 99999999999LL}}, "max_concurrent_starts: 99999999999"},
      {json{{"max_total", 18446744073709551615ULL}}, "max_total: 18446744073709551615"},
  };
  for (const auto& c : cases) {
    auto changed = tuner_.Patch("default", c.change, "ops");
    ASSERT_FALSE(changed.ok()) << c.change.dump();
    EXPECT_EQ(changed.error().code(), ErrorCode::kInvalidArgument) << c.change.dump();
    EXPECT_THAT(changed.error().message(), HasSubstr(c.names)) << c.change.dump();
    EXPECT_THAT(changed.error().message(), HasSubstr("pool 'default'")) << c.change.dump();
  }
  EXPECT_EQ(pools_.applied(), 0);
  // At the bound it passes.
  auto at =
      tuner_.Patch("default", json{{"max_concurrent_starts", config::kMaxConcurrentStarts}}, "ops");
  ASSERT_TRUE(at.ok()) << at.error().ToString();
  EXPECT_EQ(pools_.Settings("default")->sizes.max_concurrent_starts, config::kMaxConcurrentStarts);
}

// Within every per-pool bound, a change is still refused when the server's threads would not
// fit the host: the same budget the configuration file passes (config::CheckThreadBudget).
TEST(PoolTunerBudgetTest, RefusesAChangePastTheHostsThreadBudgetNamingIt) {
  testing::FakePools pools;
  config::Config running;  // default pool: 2 starts; sessions on
  // A host whose task limit leaves just the running configuration's threads and 10 more.
  const std::int64_t cost = config::ThreadCostOf(running).total();
  const config::HostLimits host{2 * (cost + 10), "kernel.pid_max"};
  PoolTuner tuner(pools, PoolBounds{running, host}, nullptr,
                  std::make_shared<spdlog::logger>("test"));
  // +4 starts cost 8 threads (the run pool's and the session pool's): within.
  auto within = tuner.Patch("default", json{{"max_concurrent_starts", 6}}, "ops");
  ASSERT_TRUE(within.ok()) << within.error().ToString();
  auto past = tuner.Patch("default", json{{"max_concurrent_starts", 8}}, "ops");
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(past.error().message(), HasSubstr("max_concurrent_starts = 8"));
  EXPECT_THAT(past.error().message(), HasSubstr("thread budget " + std::to_string(cost + 10)));
  EXPECT_THAT(past.error().message(), HasSubstr("kernel.pid_max"));
  EXPECT_EQ(pools.Settings("default")->sizes.max_concurrent_starts, 6);
}

TEST_F(PoolTunerTest, LimitsMergeOverTheCurrentOnes) {
  auto changed = tuner_.Patch("default", json{{"limits", {{"timeout_s", 60}}}}, "ops");
  ASSERT_TRUE(changed.ok()) << changed.error().ToString();
  const auto limits = pools_.Settings("default")->limits;
  EXPECT_EQ(limits.timeout_s, 60);
  EXPECT_EQ(limits.memory_bytes, config::Limits{}.memory_bytes);
  EXPECT_THAT(log_.str(), HasSubstr("limits: {"));
}

TEST_F(PoolTunerTest, AutoscaledPoolsRefuseMinIdleButTakeTheirBounds) {
  ASSERT_TRUE(
      tuner_
          .Patch("default",
                 json{{"autoscale",
                       {{"enabled", true}, {"min_idle_floor", 1}, {"min_idle_ceiling", 6}}}},
                 "ops")
          .ok());
  auto refused = tuner_.Patch("default", json{{"min_idle", 3}}, "ops");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kConflict);
  EXPECT_THAT(refused.error().message(), HasSubstr("autoscaled"));
  EXPECT_TRUE(tuner_.Patch("default", json{{"autoscale", {{"min_idle_floor", 2}}}}, "ops").ok());
  EXPECT_EQ(pools_.Settings("default")->autoscale.min_idle_floor, 2);
  // Turning the autoscaler off in the same change allows min_idle.
  auto off =
      tuner_.Patch("default", json{{"min_idle", 3}, {"autoscale", {{"enabled", false}}}}, "ops");
  ASSERT_TRUE(off.ok()) << off.error().ToString();
  EXPECT_EQ(pools_.Settings("default")->sizes.min_idle, 3);
}

TEST_F(PoolTunerTest, UnknownPoolIsNotFound) {
  EXPECT_EQ(tuner_.Patch("gpu", json{{"min_idle", 1}}, "ops").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(tuner_.Drain("gpu", "ops").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(tuner_.DrainStatus("gpu").error().code(), ErrorCode::kNotFound);
}

TEST_F(PoolTunerTest, DrainIsLoggedAndCounted) {
  auto drain = tuner_.Drain("default", "ops");
  ASSERT_TRUE(drain.ok());
  EXPECT_EQ((*drain)["to_replace"], 3);
  EXPECT_EQ((*drain)["remaining"], 2);
  EXPECT_EQ((*drain)["done"], false);
  EXPECT_THAT(log_.str(), HasSubstr("ops (api) drained pool 'default'"));
  EXPECT_THAT(
      metrics_.Render({}),
      HasSubstr(R"(sandbox_admin_changes_total{field="drain",pool="default",source="api"} 1)"));
}

TEST_F(PoolTunerTest, ApplyConfiguredChangesOnlyWhatDiffers) {
  config::PoolConfig configured;
  configured.name = "default";
  configured.min_idle = 2;
  configured.max_total = 5;
  ASSERT_TRUE(tuner_.ApplyConfigured(configured, "SIGHUP").ok());
  EXPECT_EQ(pools_.Settings("default")->sizes.max_total, 5);
  EXPECT_THAT(log_.str(), HasSubstr("SIGHUP (reload) changed pool 'default' max_total: 8 -> 5"));
  EXPECT_THAT(log_.str(), ::testing::Not(HasSubstr("min_idle:")));
}

}  // namespace
}  // namespace sandbox::admin

namespace sandbox::admin {
namespace {

// A pool with a network policy: its entries change live, its mode only with a restart.
TEST(PoolTunerNetworkTest, TheEntriesChangeLiveTheModeDoesNot) {
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  testing::FakePools pools;
  service::PoolSettings settings = *pools.Settings("default");
  settings.network.mode = config::NetworkPolicy::Mode::kAllowlist;
  settings.network.allow.push_back(*config::ParseNetworkRule("pypi.org"));
  ASSERT_TRUE(pools.Apply("default", settings));
  metrics::Metrics metrics{metrics::MetricsOptions{"test"}};
  PoolTuner tuner(pools, PoolBounds{}, &metrics, logger);

  auto changed = tuner.Patch(
      "default",
      json::parse(R"({"network": {"mode": "allowlist", "allow": ["pypi.org", "example.com"]}})"),
      "ops");
  ASSERT_TRUE(changed.ok()) << changed.error().ToString();
  EXPECT_EQ((*changed)["network"]["allow"], json::parse(R"(["pypi.org", "example.com"])"));
  EXPECT_EQ(pools.Settings("default")->network.allow.size(), 2u);
  EXPECT_THAT(log.str(), HasSubstr("changed pool 'default' network: allowlist: pypi.org -> "
                                   "allowlist: pypi.org example.com"));
  EXPECT_THAT(metrics.Render({}), HasSubstr(R"(field="network",pool="default",source="api"} 1)"));

  auto off = tuner.Patch("default", json::parse(R"({"network": {"mode": "none"}})"), "ops");
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.error().code(), ErrorCode::kConflict);
  EXPECT_THAT(off.error().message(), HasSubstr("needs a restart"));
  auto bad = tuner.Patch(
      "default", json::parse(R"({"network": {"mode": "allowlist", "allow": ["*"]}})"), "ops");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("network.allow[0]"));
  auto index = tuner.Patch("default", json::parse(R"({"network": {"mode": "allowlist",
      "allow": ["pypi.org"], "pip_index_url": "https://evil.example/simple/"}})"),
                           "ops");
  ASSERT_FALSE(index.ok());
  EXPECT_THAT(index.error().message(), HasSubstr("pip_index_url: its host is not allowed"));
  EXPECT_EQ(pools.Settings("default")->network.allow.size(), 2u);  // refusals change nothing
}

}  // namespace
}  // namespace sandbox::admin
