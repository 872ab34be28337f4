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

}  // namespace
}  // namespace sandbox
