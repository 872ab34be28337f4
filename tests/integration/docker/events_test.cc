// The engine's event stream: a `die` for a container we start, the callback watcher, and prompt
// stopping from another thread.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "docker_test_env.h"

namespace sandbox::docker::testing {
namespace {

using namespace std::chrono_literals;

class EventsTest : public DockerTest {};

EventOptions TestContainerEvents() {
  EventOptions options;
  options.filters = {{"type", {"container"}}, {"label", {std::string(kTestLabel) + "=true"}}};
  return options;
}

TEST_F(EventsTest, SeesDieWithExitCode) {
  auto events = client().Events(TestContainerEvents());
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  auto guard = Create(TestSpec({"python3", "-c", "import sys; sys.exit(7)"}));
  ASSERT_TRUE(guard);
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());

  bool saw_create = false, saw_start = false;
  Deadline deadline = DeadlineAfter(60s);
  for (;;) {
    auto event = (*events)->Next(deadline);
    ASSERT_TRUE(event.ok()) << event.error().ToString();
    ASSERT_TRUE(event->has_value());
    const Event& e = **event;
    if (e.actor_id != guard->id()) continue;
    EXPECT_EQ(e.type, "container");
    EXPECT_EQ(e.attributes.at(kTestLabel), "true");  // labels travel as attributes
    if (e.action == "create") saw_create = true;
    if (e.action == "start") saw_start = true;
    if (e.action == "die") {
      ASSERT_TRUE(e.exit_code().has_value());
      EXPECT_EQ(*e.exit_code(), 7);
      EXPECT_GT(e.time, 0);
      break;
    }
  }
  EXPECT_TRUE(saw_create);
  EXPECT_TRUE(saw_start);
}

TEST_F(EventsTest, NextTimesOutAndStopWakesItPromptly) {
  EventOptions options = TestContainerEvents();
  options.filters["label"] = {"io.sandbox-mcp.test-case=never-" + std::to_string(::getpid())};
  auto events = client().Events(options);
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  auto idle = (*events)->Next(DeadlineAfter(200ms));
  ASSERT_FALSE(idle.ok());
  EXPECT_EQ(idle.error().code(), ErrorCode::kTimeout);

  EventStream* raw = events->get();
  std::thread stopper([raw] {
    std::this_thread::sleep_for(200ms);
    raw->Stop();
  });
  auto start = Clock::now();
  auto next = raw->Next(DeadlineAfter(60s));
  auto took = Clock::now() - start;
  stopper.join();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code(), ErrorCode::kCancelled);
  EXPECT_LT(took, 2s);
}

TEST_F(EventsTest, WatcherDeliversToCallbackAndStopsPromptly) {
  auto events = client().Events(TestContainerEvents());
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Event> seen;
  auto watcher = EventWatcher::Start(std::move(*events), [&](const Event& e) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(e);
    cv.notify_all();
  });

  auto guard = Create(TestSpec({"true"}));
  ASSERT_TRUE(guard);
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    bool died = cv.wait_for(lock, 60s, [&] {
      for (const auto& e : seen) {
        if (e.actor_id == guard->id() && e.action == "die") return true;
      }
      return false;
    });
    EXPECT_TRUE(died);
  }
  auto start = Clock::now();
  watcher->Stop();
  EXPECT_LT(Clock::now() - start, 2s);
}

}  // namespace
}  // namespace sandbox::docker::testing
