// The autoscaler's policy as a pure class: demand in, target out, time passed in by a fake clock.
#include "sandbox/pool/autoscale_policy.h"

#include <gtest/gtest.h>

#include "support/fake_factory.h"

namespace sandbox::pool {
namespace {

using namespace std::chrono_literals;

AutoscaleOptions Options() {
  AutoscaleOptions options;
  options.enabled = true;
  options.min_idle_floor = 1;
  options.min_idle_ceiling = 6;
  options.headroom = 1;
  options.window = 20s;
  return options;
}

TEST(AutoscalePolicyTest, IdleDemandKeepsTheFloor) {
  testing::FakeClock clock;
  AutoscalePolicy policy(Options());
  EXPECT_EQ(policy.Target(clock.Now(), 8), 1);
  policy.Observe(0, clock.Now());
  clock.Advance(1h);
  EXPECT_EQ(policy.Target(clock.Now(), 8), 1);
}

TEST(AutoscalePolicyTest, GrowsAtOnceWithDemand) {
  testing::FakeClock clock;
  AutoscalePolicy policy(Options());
  policy.Observe(3, clock.Now());
  EXPECT_EQ(policy.Peak(clock.Now()), 3);
  EXPECT_EQ(policy.Target(clock.Now(), 8), 4);  // peak 3 + headroom 1, no time needed
}

TEST(AutoscalePolicyTest, KeepsThePeakForTheWindowThenShrinks) {
  testing::FakeClock clock;
  AutoscalePolicy policy(Options());
  policy.Observe(4, clock.Now());
  clock.Advance(5s);
  policy.Observe(1, clock.Now());  // demand fell
  clock.Advance(14s);              // the peak ended 14 s ago: still within the window
  EXPECT_EQ(policy.Target(clock.Now(), 8), 5);
  clock.Advance(7s);                            // 21 s since the peak ended
  EXPECT_EQ(policy.Target(clock.Now(), 8), 2);  // the current demand 1 + headroom
}

TEST(AutoscalePolicyTest, ALastingDemandNeverLeavesTheWindow) {
  testing::FakeClock clock;
  AutoscalePolicy policy(Options());
  policy.Observe(3, clock.Now());
  clock.Advance(10min);  // no change since: demand is still 3
  EXPECT_EQ(policy.Target(clock.Now(), 8), 4);
}

TEST(AutoscalePolicyTest, ClampedToCeilingAndMaxTotal) {
  testing::FakeClock clock;
  AutoscalePolicy policy(Options());
  policy.Observe(20, clock.Now());
  EXPECT_EQ(policy.Target(clock.Now(), 8), 6);  // the ceiling
  EXPECT_EQ(policy.Target(clock.Now(), 3), 3);  // max_total below the ceiling
  AutoscaleOptions no_ceiling = Options();
  no_ceiling.min_idle_ceiling = 0;  // = max_total
  AutoscalePolicy open(no_ceiling);
  open.Observe(20, clock.Now());
  EXPECT_EQ(open.Target(clock.Now(), 8), 8);
}

TEST(AutoscalePolicyTest, FloorHoldsWithoutDemandAndNeverExceedsMaxTotal) {
  testing::FakeClock clock;
  AutoscaleOptions options = Options();
  options.min_idle_floor = 3;
  options.headroom = 0;
  AutoscalePolicy policy(options);
  policy.Observe(0, clock.Now());
  EXPECT_EQ(policy.Target(clock.Now(), 8), 3);
  EXPECT_EQ(policy.Target(clock.Now(), 2), 2);
}

TEST(AutoscalePolicyTest, PeakIsTheHighestWithinTheWindow) {
  testing::FakeClock clock;
  AutoscalePolicy policy(Options());
  policy.Observe(2, clock.Now());
  clock.Advance(1s);
  policy.Observe(5, clock.Now());
  clock.Advance(1s);
  policy.Observe(3, clock.Now());
  clock.Advance(1s);
  policy.Observe(1, clock.Now());
  EXPECT_EQ(policy.Peak(clock.Now()), 5);
  clock.Advance(19s);  // the 5 ended 20 s ago; the 3 ended 19 s ago
  EXPECT_EQ(policy.Peak(clock.Now()), 3);
  clock.Advance(2s);
  EXPECT_EQ(policy.Peak(clock.Now()), 1);
}

TEST(AutoscalePolicyTest, GrowsForTheDemandNowButKeepsForThePeak) {
  testing::FakeClock clock;
  AutoscalePolicy policy(Options());
  policy.Observe(5, clock.Now());
  EXPECT_EQ(policy.GrowTarget(8), 6);
  clock.Advance(1s);
  policy.Observe(1, clock.Now());
  EXPECT_EQ(policy.GrowTarget(8), 2);           // nothing starts for the passed peak ...
  EXPECT_EQ(policy.Target(clock.Now(), 8), 6);  // ... but what exists is kept for the window
  EXPECT_EQ(policy.GrowTarget(3), 2);
  policy.Observe(0, clock.Now());
  EXPECT_EQ(policy.GrowTarget(8), 1);  // the floor
}

}  // namespace
}  // namespace sandbox::pool
