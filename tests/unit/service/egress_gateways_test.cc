// The parts of EgressGateways that need no engine: the address blocks and which pools get a
// gateway. The proxy and networks themselves are tested against the real engine
// (tests/integration/egress).
#include "sandbox/service/egress_gateways.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fake_engine.h"

namespace sandbox::service {
namespace {

using ::testing::HasSubstr;

TEST(EgressGatewaysTest, BlocksAreTheSlash24sOfTheSubnetsInOrder) {
  EXPECT_EQ(EgressGateways::Block("10.213.0.0/16", 0), "10.213.0.0/24");
  EXPECT_EQ(EgressGateways::Block("10.213.0.0/16", 3), "10.213.3.0/24");
  EXPECT_EQ(EgressGateways::Block("10.213.0.0/16", 255), "10.213.255.0/24");
  EXPECT_EQ(EgressGateways::Block("10.213.0.0/16", 256), "");
  EXPECT_EQ(EgressGateways::Block("10.213.7.9/24", 0), "10.213.7.0/24");  // host bits dropped
  EXPECT_EQ(EgressGateways::Block("10.213.7.0/24", 1), "");
  EXPECT_EQ(EgressGateways::Block("10.212.0.0/15", 256), "10.213.0.0/24");
  EXPECT_EQ(EgressGateways::Block("10.213.0.0/25", 0), "");  // smaller than a block
  EXPECT_EQ(EgressGateways::Block("nonsense", 0), "");
}

TEST(EgressGatewaysTest, OnlyAPoolWithAPolicyGetsAGatewayAndAnEngineWithoutNetworksSaysSo) {
  sandbox::testing::FakeEngine engine;
  EgressGateways gateways(EgressOptions{}, nullptr);
  config::PoolConfig none;
  EXPECT_EQ(gateways.For(engine, none), nullptr);
  config::PoolConfig data;
  data.name = "data";
  data.network.mode = config::NetworkPolicy::Mode::kAllowlist;
  auto* link = gateways.For(engine, data);
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(gateways.For(engine, data), link);  // one per pool and engine
  auto joined = link->Join(engine::DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.error().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(joined.error().message(), HasSubstr("cannot make the networks"));
  auto statuses = gateways.Statuses();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].pool, "data");
  EXPECT_FALSE(statuses[0].up);
  EXPECT_THAT(statuses[0].last_error, HasSubstr("cannot make the networks"));
}

}  // namespace
}  // namespace sandbox::service
