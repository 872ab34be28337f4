#include "sandbox/core/slot_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace sandbox {
namespace {

TEST(SlotLimiterTest, RefusesBeyondCapacityAndTakesSlotsBack) {
  SlotLimiter limiter(2);
  auto a = limiter.TryAcquire();
  auto b = limiter.TryAcquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(limiter.TryAcquire(), nullptr);
  EXPECT_EQ(limiter.in_use(), 2u);
  auto copy = a;  // a shared slot is given back by its last holder only
  a.reset();
  EXPECT_EQ(limiter.TryAcquire(), nullptr);
  copy.reset();
  EXPECT_EQ(limiter.in_use(), 1u);
  EXPECT_NE(limiter.TryAcquire(), nullptr);  // taken and given back at once
  EXPECT_EQ(limiter.in_use(), 1u);
}

TEST(SlotLimiterTest, ASlotMayOutliveItsLimiter) {
  std::shared_ptr<SlotLimiter::Slot> slot;
  {
    SlotLimiter limiter(1);
    slot = limiter.TryAcquire();
    ASSERT_NE(slot, nullptr);
  }
  slot.reset();  // must not touch freed memory (ASan would say so)
}

TEST(SlotLimiterTest, ConcurrentTakersNeverExceedTheCapacity) {
  SlotLimiter limiter(3);
  std::atomic<int> held{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        auto slot = limiter.TryAcquire();
        if (!slot) continue;
        const int now = ++held;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --held;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_GE(most.load(), 1);
  EXPECT_EQ(limiter.in_use(), 0u);
}

TEST(SlotLimiterTest, OneKeyCannotHoldEverySlot) {
  SlotLimiter limiter(4, 2);
  SlotLimiter::Refusal why = SlotLimiter::Refusal::kNone;
  auto a1 = limiter.TryAcquire("alice");
  auto a2 = limiter.TryAcquire("alice");
  ASSERT_NE(a1, nullptr);
  ASSERT_NE(a2, nullptr);
  EXPECT_EQ(limiter.TryAcquire("alice", &why), nullptr);
  EXPECT_EQ(why, SlotLimiter::Refusal::kPerKey);
  EXPECT_EQ(limiter.in_use("alice"), 2u);
  // Others still get the rest; the server-wide bound still holds.
  auto b1 = limiter.TryAcquire("bob");
  auto b2 = limiter.TryAcquire("bob");
  ASSERT_NE(b1, nullptr);
  ASSERT_NE(b2, nullptr);
  EXPECT_EQ(limiter.TryAcquire("carol", &why), nullptr);
  EXPECT_EQ(why, SlotLimiter::Refusal::kCapacity);
  a1.reset();
  EXPECT_EQ(limiter.in_use("alice"), 1u);
  EXPECT_NE(limiter.TryAcquire("alice", &why), nullptr);
  EXPECT_EQ(why, SlotLimiter::Refusal::kNone);
}

TEST(SlotLimiterTest, KeysWithoutTheirOwnBoundShareTheCapacity) {
  SlotLimiter limiter(2);
  auto a1 = limiter.TryAcquire("alice");
  auto a2 = limiter.TryAcquire("alice");
  EXPECT_NE(a2, nullptr);
  EXPECT_EQ(limiter.TryAcquire("bob"), nullptr);
  a2.reset();
  a1.reset();
  EXPECT_EQ(limiter.in_use("alice"), 0u);
  EXPECT_EQ(limiter.in_use(), 0u);
}

}  // namespace
}  // namespace sandbox
