#include "sandbox/core/principal_quota.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

namespace sandbox {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class PrincipalQuotaTest : public ::testing::Test {
 protected:
  PrincipalQuota Make(int concurrent, int per_minute) {
    return PrincipalQuota(FairShareOptions{concurrent, per_minute}, [this] { return now_; });
  }
  PrincipalQuota::Clock::time_point now_{};
};

TEST_F(PrincipalQuotaTest, NoLimitsAdmitsEverything) {
  auto quota = Make(0, 0);
  std::vector<std::unique_ptr<PrincipalQuota::Ticket>> held;
  for (int i = 0; i < 1000; ++i) {
    auto t = quota.Admit("alice");
    ASSERT_TRUE(t.ok());
    held.push_back(std::move(*t));
  }
  EXPECT_EQ(quota.in_progress("alice"), 1000);
  held.clear();
  EXPECT_EQ(quota.in_progress("alice"), 0);
}

TEST_F(PrincipalQuotaTest, ConcurrentRunsArePerPrincipal) {
  auto quota = Make(2, 0);
  auto a1 = quota.Admit("alice");
  auto a2 = quota.Admit("alice");
  ASSERT_TRUE(a1.ok() && a2.ok());
  auto a3 = quota.Admit("alice");
  ASSERT_FALSE(a3.ok());
  EXPECT_EQ(a3.error().code(), ErrorCode::kRateLimited);
  EXPECT_EQ(a3.error().retry_after_s(), 1);
  EXPECT_THAT(a3.error().message(), HasSubstr("per_principal.max_concurrent_runs"));
  EXPECT_TRUE(quota.Admit("bob").ok());  // another token is not affected
  a1->reset();
  EXPECT_TRUE(quota.Admit("alice").ok());
}

TEST_F(PrincipalQuotaTest, RunsPerMinuteAllowAMinutesBurstThenTheRate) {
  auto quota = Make(0, 60);  // one per second
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(quota.Admit("alice").ok()) << i;
  auto refused = quota.Admit("alice");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kRateLimited);
  EXPECT_EQ(refused.error().retry_after_s(), 1);
  EXPECT_THAT(refused.error().message(), HasSubstr("per_principal.runs_per_minute"));
  EXPECT_TRUE(quota.Admit("bob").ok());
  now_ += 1s;
  EXPECT_TRUE(quota.Admit("alice").ok());
  EXPECT_FALSE(quota.Admit("alice").ok());
  now_ += 10min;  // refills to a minute's worth, not more
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(quota.Admit("alice").ok()) << i;
  EXPECT_FALSE(quota.Admit("alice").ok());
}

TEST_F(PrincipalQuotaTest, RetryAfterCoversTheWaitForOneRun) {
  auto quota = Make(0, 6);  // one per 10 s
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(quota.Admit("alice").ok());
  auto refused = quota.Admit("alice");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().retry_after_s(), 10);
  now_ += std::chrono::seconds(refused.error().retry_after_s());
  EXPECT_TRUE(quota.Admit("alice").ok());
}

}  // namespace
}  // namespace sandbox
