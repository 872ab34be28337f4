#include "http/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace sandbox::http {
namespace {

using namespace std::chrono_literals;

template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Tasks one after another are served by one thread: workers start on demand, and the one idle
// last serves next (httplib's pool woke every thread in turn, touching every stack).
TEST(WorkerPoolTest, SequentialTasksReuseOneWarmThread) {
  WorkerPool pool(64);
  std::set<std::thread::id> seen;
  for (int i = 0; i < 200; ++i) {
    std::promise<std::thread::id> ran;
    auto done = ran.get_future();
    pool.enqueue([&ran] { ran.set_value(std::this_thread::get_id()); });
    seen.insert(done.get());
    ASSERT_TRUE(WaitFor([&] { return pool.idle() == pool.threads(); }));
  }
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(pool.threads(), 1u);
  pool.shutdown();
}

TEST(WorkerPoolTest, MinThreadsStartAtOnceAndTheLastIdleServes) {
  WorkerPool pool(8, 4);
  ASSERT_TRUE(WaitFor([&] { return pool.idle() == 4; }));
  EXPECT_EQ(pool.threads(), 4u);
  std::set<std::thread::id> seen;
  for (int i = 0; i < 50; ++i) {
    std::promise<std::thread::id> ran;
    auto done = ran.get_future();
    pool.enqueue([&ran] { ran.set_value(std::this_thread::get_id()); });
    seen.insert(done.get());
    ASSERT_TRUE(WaitFor([&] { return pool.idle() == 4; }));
  }
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(pool.threads(), 4u);
}

TEST(WorkerPoolTest, GrowsToMaxThreadsThenQueues) {
  WorkerPool pool(3);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> running{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < 5; ++i) {
    pool.enqueue([&] {
      ++running;
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
      --running;
      ++finished;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return running.load() == 3; }));
  EXPECT_EQ(pool.threads(), 3u);  // never more than max_threads
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(WaitFor([&] { return finished.load() == 5; }));  // the queued two ran too
  EXPECT_EQ(pool.threads(), 3u);
  pool.shutdown();
}

TEST(WorkerPoolTest, ShutdownRunsQueuedTasksAndJoins) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(1);
    for (int i = 0; i < 10; ++i) {
      pool.enqueue([&] {
        std::this_thread::sleep_for(1ms);
        ++ran;
      });
    }
    pool.shutdown();
    EXPECT_EQ(ran.load(), 10);
    pool.shutdown();  // idempotent
  }
  EXPECT_EQ(ran.load(), 10);
}

}  // namespace
}  // namespace sandbox::http
