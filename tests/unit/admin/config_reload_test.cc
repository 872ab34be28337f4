// ConfigReloader with a loader returning prepared configurations, over fake pools: a valid file
// applies tokens and pool sizes, an invalid one changes nothing, restart-only fields are listed.
#include "sandbox/admin/config_reload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "unit/admin/fake_pools.h"

namespace sandbox::admin {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr const char* kRunToken = "run-token-0123456789";

class ConfigReloadTest : public ::testing::Test {
 protected:
  ConfigReloadTest() {
    running_.server.token = kRunToken;
    next_ = running_;
    http::GuardOptions options;
    options.token = kRunToken;
    guard_ = std::make_unique<http::RequestGuard>(options);
  }

  ConfigReloader Reloader() {
    return ConfigReloader(
        running_, [this]() -> Result<config::Config> { return next_; }, guard_.get(), tuner_,
        &metrics_, logger_);
  }

  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_ = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
  testing::FakePools pools_;
  metrics::Metrics metrics_{metrics::MetricsOptions{"test"}};
  PoolTuner tuner_{pools_, PoolBounds{}, &metrics_, logger_};
  config::Config running_;
  Result<config::Config> next_ = config::Config{};
  std::unique_ptr<http::RequestGuard> guard_;
};

TEST_F(ConfigReloadTest, AppliesPoolSizesAndTokens) {
  auto& next = next_.value();
  next.pools[0].min_idle = 4;
  next.pools[0].limits.timeout_s = 45;
  next.server.tokens = {{"alice", "alice-token-0123456789"}};
  next.server.admin_tokens = {{"ops", "admin-token-0123456789"}};
  auto reloader = Reloader();
  const ReloadOutcome outcome = reloader.Reload();
  EXPECT_TRUE(outcome.applied) << outcome.error;
  EXPECT_TRUE(outcome.ignored.empty());
  EXPECT_EQ(pools_.Settings("default")->sizes.min_idle, 4);
  EXPECT_EQ(pools_.Settings("default")->limits.timeout_s, 45);
  EXPECT_EQ(guard_->Principal("Bearer alice-token-0123456789"), "alice");
  EXPECT_EQ(guard_->AdminPrincipal("Bearer admin-token-0123456789"), "ops");
  EXPECT_THAT(log_.str(), HasSubstr("SIGHUP (reload) changed pool 'default' min_idle: 2 -> 4"));
  EXPECT_THAT(log_.str(), ::testing::Not(HasSubstr("alice-token-0123456789")));
  EXPECT_THAT(metrics_.Render({}),
              HasSubstr(R"(sandbox_config_reloads_total{result="applied"} 1)"));
}

TEST_F(ConfigReloadTest, AnInvalidFileChangesNothingAndNamesTheField) {
  auto& next = next_.value();
  next.pools[0].min_idle = 4;
  next.pools[0].max_total = 3;  // min_idle above max_total
  next.server.tokens = {{"alice", "alice-token-0123456789"}};
  auto reloader = Reloader();
  const ReloadOutcome outcome = reloader.Reload();
  EXPECT_FALSE(outcome.applied);
  EXPECT_THAT(outcome.error, HasSubstr("pools[0].min_idle"));
  EXPECT_THAT(log_.str(), HasSubstr("[error]"));
  EXPECT_THAT(log_.str(), HasSubstr("pools[0].min_idle"));
  EXPECT_EQ(pools_.applied(), 0);
  EXPECT_EQ(guard_->Principal("Bearer alice-token-0123456789"), "");
  EXPECT_EQ(guard_->Principal(std::string("Bearer ") + kRunToken), "default");
  EXPECT_THAT(metrics_.Render({}),
              HasSubstr(R"(sandbox_config_reloads_total{result="rejected"} 1)"));
}

TEST_F(ConfigReloadTest, AnUnreadableFileIsRejected) {
  next_ = Error(ErrorCode::kInvalidArgument, "configuration file: not JSON");
  auto reloader = Reloader();
  const ReloadOutcome outcome = reloader.Reload();
  EXPECT_FALSE(outcome.applied);
  EXPECT_THAT(log_.str(), HasSubstr("not JSON"));
}

TEST_F(ConfigReloadTest, AdminTokensMustDifferFromRunTokens) {
  next_.value().server.admin_tokens = {{"ops", kRunToken}};
  auto reloader = Reloader();
  const ReloadOutcome outcome = reloader.Reload();
  EXPECT_FALSE(outcome.applied);
  EXPECT_THAT(outcome.error, HasSubstr("server.admin_tokens.ops"));
}

TEST_F(ConfigReloadTest, RestartOnlyChangesAreListedAndLoggedAsIgnored) {
  auto& next = next_.value();
  next.pools[0].image = "sandbox-mcp-python:next";
  next.pools[0].max_total = 6;  // applied alongside
  config::PoolConfig gpu;
  gpu.name = "gpu";
  next.pools.push_back(gpu);
  next.server.listen_port = 9999;
  auto reloader = Reloader();
  const ReloadOutcome outcome = reloader.Reload();
  ASSERT_TRUE(outcome.applied) << outcome.error;
  EXPECT_THAT(outcome.ignored, Contains(HasSubstr("pools[default]")));
  EXPECT_THAT(outcome.ignored, Contains("pool 'gpu' added"));
  EXPECT_THAT(outcome.ignored, Contains(HasSubstr("server")));
  EXPECT_THAT(log_.str(), HasSubstr("ignored until restart"));
  EXPECT_EQ(pools_.Settings("default")->sizes.max_total, 6);
  EXPECT_FALSE(pools_.Settings("gpu").has_value());
}

TEST(RestartOnlyChangesTest, TunablesAndTokensAreNotListed) {
  config::Config a;
  config::Config b = a;
  b.pools[0].min_idle = 0;
  b.pools[0].max_total = 3;
  b.pools[0].max_concurrent_starts = 1;
  b.pools[0].autoscale.enabled = true;
  b.pools[0].limits.timeout_s = 10;
  b.server.token = "0123456789abcdef";
  b.server.admin_tokens = {{"ops", "fedcba9876543210"}};
  EXPECT_TRUE(RestartOnlyChanges(a, b).empty());
  b.pools.clear();
  EXPECT_THAT(RestartOnlyChanges(a, b), Contains("pool 'default' removed"));
}

config::EngineConfig Engine(const std::string& name, const std::string& host) {
  config::EngineConfig engine;
  engine.name = name;
  engine.host = host;
  return engine;
}

// Engines are connected, checked and swept at start-up only: a reload names a changed engine
// list (docker.engines, or the docker.host shorthand) and a pool's engines as needing a restart.
TEST(RestartOnlyChangesTest, EnginesNeedARestart) {
  config::Config a;
  config::Config b = a;
  b.docker.host = "unix:///run/other.sock";
  EXPECT_THAT(RestartOnlyChanges(a, b), Contains(HasSubstr("docker.engines")));

  config::Config listed = a;
  listed.docker.engines = {Engine("e1", "unix:///run/e1.sock"),
                           Engine("e2", "unix:///run/e2.sock")};
  config::Config more = listed;
  more.docker.engines.push_back(Engine("e3", "unix:///run/e3.sock"));
  EXPECT_THAT(RestartOnlyChanges(listed, more),
              ::testing::ElementsAre(HasSubstr("docker.engines")));
  config::Config pinned = listed;
  pinned.pools[0].engines = {"e2"};
  EXPECT_THAT(RestartOnlyChanges(listed, pinned), ::testing::ElementsAre("pools[default].engines"));

  // The shorthand spelled out as its one engine is the same engine list: nothing to restart.
  config::Config spelled = a;
  spelled.docker.engines = {Engine("local", a.docker.host)};
  EXPECT_TRUE(RestartOnlyChanges(a, spelled).empty());

  config::Config slower = a;
  slower.docker.call_timeout = std::chrono::milliseconds(60000);
  EXPECT_THAT(RestartOnlyChanges(a, slower),
              ::testing::ElementsAre("docker (other than its engines)"));
}

}  // namespace
}  // namespace sandbox::admin
