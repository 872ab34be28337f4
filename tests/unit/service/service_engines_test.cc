// SandboxService over several engines, without starting a pool: each pool's image checked on each
// of its engines, an engine without it left out of that pool (named, with the fixes), a pool with
// no engine left refused, one engine refused as before; the engines' view for the admin API and
// the drain's refusals. FakeEngines at the seam.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "sandbox/service/sandbox_service.h"
#include "support/fake_engine.h"

namespace sandbox::service {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::shared_ptr<spdlog::logger> Logger() {
  return std::make_shared<spdlog::logger>("service-engines-test");  // no sinks: quiet
}

config::Config TwoEnginesTwoPools() {
  config::Config c;
  c.instance_id = "engines-test";
  c.docker.engines = {{"e1", "unix:///run/e1.sock", "", "", "", ""},
                      {"e2", "unix:///run/e2.sock", "", "", "", ""}};
  c.pools[0].name = "default";
  c.pools[0].image = "img-a";
  config::PoolConfig other = c.pools[0];
  other.name = "other";
  other.image = "img-b";
  other.engines = {"e2"};
  c.pools.push_back(other);
  return c;
}

class ServiceEnginesTest : public ::testing::Test {
 protected:
  testing::FakeEngine e1_{"e1"};
  testing::FakeEngine e2_{"e2"};
};

TEST_F(ServiceEnginesTest, AnEngineWithoutAPoolsImageIsLeftOutOfThatPoolOnly) {
  const auto config = TwoEnginesTwoPools();
  e1_.AddImage("img-a", {});
  e2_.AddImage("img-b", {});  // e2 lacks img-a
  auto service =
      SandboxService::Create(config, engine::EngineList{&e1_, &e2_}, ServiceOptions{}, Logger());
  ASSERT_TRUE(service.ok()) << service.error().ToString();
  const auto& excluded = (*service)->excluded();
  ASSERT_EQ(excluded.size(), 1u);
  EXPECT_EQ(excluded[0].pool, "default");
  EXPECT_EQ(excluded[0].engine, "e2");
  EXPECT_THAT(excluded[0].why, HasSubstr("img-a"));
  EXPECT_THAT(excluded[0].why, HasSubstr("images/build.sh"));
  EXPECT_THAT(excluded[0].why, HasSubstr("docker save img-a"));

  const nlohmann::json engines = (*service)->Engines();
  ASSERT_EQ(engines.size(), 2u);
  EXPECT_EQ(engines[0]["name"], "e1");
  EXPECT_EQ(engines[0]["state"], "up");
  // e1 serves only the default pool (the other pool names e2 alone).
  ASSERT_EQ(engines[0]["pools"].size(), 1u) << engines.dump();
  EXPECT_EQ(engines[0]["pools"][0]["name"], "default");
  EXPECT_EQ(engines[0]["pools"][0]["state"], "placed");
  ASSERT_EQ(engines[1]["pools"].size(), 2u) << engines.dump();
  EXPECT_EQ(engines[1]["pools"][0]["name"], "default");
  EXPECT_EQ(engines[1]["pools"][0]["state"], "excluded");
  EXPECT_EQ(engines[1]["pools"][1]["state"], "placed");
}

TEST_F(ServiceEnginesTest, APoolWithNoEngineLeftIsRefusedNamingEach) {
  const auto config = TwoEnginesTwoPools();
  e1_.AddImage("img-a", {});
  e2_.AddImage("img-a", {});  // nobody has img-b, the other pool's (on e2 only)
  auto service =
      SandboxService::Create(config, engine::EngineList{&e1_, &e2_}, ServiceOptions{}, Logger());
  ASSERT_FALSE(service.ok());
  EXPECT_THAT(service.error().message(), HasSubstr("pool 'other' has no engine it can run on"));
  EXPECT_THAT(service.error().message(), HasSubstr("engine e2"));
  EXPECT_THAT(service.error().message(), HasSubstr("img-b"));
}

TEST_F(ServiceEnginesTest, AnEngineNotConnectedAtStartIsExcludedSayingSo) {
  const auto config = TwoEnginesTwoPools();
  e1_.AddImage("img-a", {});
  // e2 did not answer when the server started: only e1 is connected; the other pool (e2 only)
  // has no engine left.
  auto service =
      SandboxService::Create(config, engine::EngineList{&e1_}, ServiceOptions{}, Logger());
  ASSERT_FALSE(service.ok());
  EXPECT_THAT(service.error().message(), HasSubstr("not reachable when the server started"));
}

TEST_F(ServiceEnginesTest, OneEngineWithoutTheImageFailsAsItAlwaysDid) {
  config::Config config;
  config.instance_id = "engines-test";
  config.pools[0].image = "img-a";
  testing::FakeEngine local("local");  // docker.host's engine
  auto service = SandboxService::Create(config, local, ServiceOptions{}, Logger());
  ASSERT_FALSE(service.ok());
  EXPECT_EQ(service.error().code(), ErrorCode::kNotFound);
  EXPECT_THAT(service.error().message(), HasSubstr("which the engine does not have"));
  EXPECT_THAT(service.error().message(), Not(HasSubstr("docker save")));
}

TEST_F(ServiceEnginesTest, DrainingNeedsAKnownEngineAndSeveralOfThem) {
  config::Config config;
  config.instance_id = "engines-test";
  config.pools[0].image = "img-a";
  testing::FakeEngine local("local");  // docker.host's engine
  local.AddImage("img-a", {});
  auto one = SandboxService::Create(config, local, ServiceOptions{}, Logger());
  ASSERT_TRUE(one.ok()) << one.error().ToString();
  auto unknown = (*one)->DrainEngine("e9", true);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kNotFound);
  EXPECT_THAT(unknown.error().message(), HasSubstr("engines: local"));
  auto only = (*one)->DrainEngine("local", true);
  ASSERT_FALSE(only.ok());
  EXPECT_EQ(only.error().code(), ErrorCode::kConflict);
  EXPECT_THAT(only.error().message(), HasSubstr("/admin/pools/{name}/drain"));
}

}  // namespace
}  // namespace sandbox::service
