#include "sandbox/core/byte_budget.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sandbox {
namespace {

using std::chrono::milliseconds;

TEST(ByteBudgetTest, ReservationsHoldAndGiveBack) {
  ByteBudget budget(100);
  auto a = budget.TryReserve(60);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(budget.in_use(), 60);
  EXPECT_FALSE(budget.TryReserve(41).has_value());
  auto b = budget.TryReserve(40);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(budget.in_use(), 100);
  a.reset();
  EXPECT_EQ(budget.in_use(), 40);
  EXPECT_EQ(budget.peak(), 100);
  EXPECT_EQ(budget.refused(), 1);
}

TEST(ByteBudgetTest, GrowAndShrinkStayWithinCapacity) {
  ByteBudget budget(100);
  auto r = budget.TryReserve(10);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->TryGrow(80));
  EXPECT_EQ(r->bytes(), 90);
  EXPECT_FALSE(r->TryGrow(11));
  EXPECT_EQ(r->bytes(), 90);
  r->Shrink(50);
  EXPECT_EQ(budget.in_use(), 40);
  r->Shrink(1000);  // at most what is held
  EXPECT_EQ(r->bytes(), 0);
  EXPECT_EQ(budget.in_use(), 0);
}

TEST(ByteBudgetTest, MovedReservationGivesBackOnce) {
  ByteBudget budget(100);
  auto r = budget.TryReserve(30);
  ASSERT_TRUE(r.has_value());
  ByteBudget::Reservation moved = std::move(*r);
  r.reset();
  EXPECT_EQ(budget.in_use(), 30);
  ByteBudget::Reservation other;
  other = std::move(moved);
  EXPECT_EQ(budget.in_use(), 30);
  other.Release();
  EXPECT_EQ(budget.in_use(), 0);
}

TEST(ByteBudgetTest, MoreThanTheCapacityIsRefusedWithoutWaiting) {
  ByteBudget budget(100);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(budget.Reserve(101, milliseconds(60000)).has_value());
  // Refused at once: a minute's wait would have hung the test.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_NE(budget.RefusalMessage(101).find("memory.inflight_bytes"), std::string::npos);
}

TEST(ByteBudgetTest, AWaiterGetsBytesAnotherGivesBack) {
  ByteBudget budget(100);
  auto held = budget.TryReserve(100);
  ASSERT_TRUE(held.has_value());
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(50));
    held.reset();
  });
  auto waited = budget.Reserve(70, milliseconds(60000));
  releaser.join();
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(budget.in_use(), 70);
}

TEST(ByteBudgetTest, AWaiterGivesUpAtItsDeadline) {
  ByteBudget budget(100);
  auto held = budget.TryReserve(100);
  EXPECT_FALSE(budget.Reserve(1, milliseconds(20)).has_value());
  EXPECT_NE(budget.RefusalMessage(1).find("retry later"), std::string::npos);
}

TEST(ByteBudgetTest, AReservationOutlivesItsBudget) {
  std::optional<ByteBudget::Reservation> r;
  {
    ByteBudget budget(100);
    r = budget.TryReserve(10);
  }
  r.reset();  // must not touch freed memory (ASan in the sanitized unit run)
}

}  // namespace
}  // namespace sandbox
