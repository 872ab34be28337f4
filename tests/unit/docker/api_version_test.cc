#include "sandbox/docker/api_version.h"

#include <gtest/gtest.h>

namespace sandbox::docker {
namespace {

TEST(ApiVersionTest, ParseAndFormat) {
  auto v = ApiVersion::Parse(" 1.41\r\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (ApiVersion{1, 41}));
  EXPECT_EQ(v->ToString(), "1.41");
  EXPECT_LT((ApiVersion{1, 9}), (ApiVersion{1, 40}));  // numeric, not lexical
  EXPECT_LT((ApiVersion{1, 47}), (ApiVersion{2, 0}));
}

TEST(ApiVersionTest, MalformedIsProtocolError) {
  for (const char* bad : {"", "1", "1.", ".41", "v1.41", "1.41.2", "1.x", "abc", "-1.41"}) {
    auto v = ApiVersion::Parse(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.error().code(), ErrorCode::kProtocol) << bad;
  }
}

TEST(NegotiateTest, EngineNewerThanTestedUsesOurMaximum) {
  auto v = NegotiateApiVersion("1.52");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, kMaxTestedApiVersion);
  auto capped = NegotiateApiVersion("1.52", ApiVersion{1, 41});
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->ToString(), "1.41");
}

TEST(NegotiateTest, EngineEqualOrBetweenUsesEngineVersion) {
  auto v = NegotiateApiVersion("1.41");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->ToString(), "1.41");
  auto at_min = NegotiateApiVersion("1.40");
  ASSERT_TRUE(at_min.ok());
  EXPECT_EQ(at_min->ToString(), "1.40");
  auto at_max = NegotiateApiVersion(kMaxTestedApiVersion.ToString());
  ASSERT_TRUE(at_max.ok());
  EXPECT_EQ(*at_max, kMaxTestedApiVersion);
}

TEST(NegotiateTest, EngineOlderThanMinimumNamesBothVersions) {
  auto v = NegotiateApiVersion("1.39");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(v.error().message().find("1.39"), std::string::npos) << v.error().message();
  EXPECT_NE(v.error().message().find("1.40"), std::string::npos) << v.error().message();
}

TEST(NegotiateTest, MalformedOrMissingHeader) {
  for (const char* bad : {"", "  ", "latest", "1.4x"}) {
    auto v = NegotiateApiVersion(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.error().code(), ErrorCode::kProtocol) << bad;
  }
}

TEST(NegotiateTest, CapBelowMinimumIsAConfigurationError) {
  auto v = NegotiateApiVersion("1.41", ApiVersion{1, 30});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), ErrorCode::kInvalidArgument);
}

TEST(EngineMinimumTest, EngineThatRequiresMoreThanWeSpeakIsUnsupported) {
  EXPECT_TRUE(CheckEngineMinimum(ApiVersion{1, 47}, "1.24").ok());
  EXPECT_TRUE(CheckEngineMinimum(ApiVersion{1, 44}, "1.44").ok());
  EXPECT_TRUE(CheckEngineMinimum(ApiVersion{1, 41}, "").ok());
  Status s = CheckEngineMinimum(ApiVersion{1, 47}, "1.50");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.error().message().find("1.50"), std::string::npos);
  EXPECT_NE(s.error().message().find("1.47"), std::string::npos);
  EXPECT_EQ(CheckEngineMinimum(ApiVersion{1, 47}, "x").error().code(), ErrorCode::kProtocol);
}

}  // namespace
}  // namespace sandbox::docker
