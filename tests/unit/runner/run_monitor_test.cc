// The run monitor: the caller's cancel reaches the harness at once and once, is re-sent once
// when unanswered, then the run is given up; past the deadline too; nothing reaches the harness
// after the run (a late cancel, a late input reply).
#include "runner/run_monitor.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace sandbox::runner {
namespace {

using engine::Clock;
using nlohmann::json;

class RunMonitorTest : public ::testing::Test {
 protected:
  RunMonitor::Send Sender() {
    return [this](const json& request, engine::Deadline) {
      std::lock_guard lock(mu_);
      sent_.push_back(request);
      return OkStatus();
    };
  }
  std::vector<json> Sent() {
    std::lock_guard lock(mu_);
    return sent_;
  }

  std::mutex mu_;
  std::vector<json> sent_;
};

TEST_F(RunMonitorTest, RunsUntilItsDeadline) {
  const auto start = Clock::now();
  RunMonitor monitor("run-1", start + std::chrono::seconds(10), Sender());
  EXPECT_EQ(monitor.Poll(start), RunMonitor::State::kRunning);
  EXPECT_EQ(monitor.NextWake(start), start + RunMonitor::kPollSlice);
  EXPECT_EQ(monitor.NextWake(start + std::chrono::milliseconds(9900)),
            start + std::chrono::seconds(10));
  EXPECT_EQ(monitor.Poll(start + std::chrono::seconds(10)), RunMonitor::State::kDeadlinePassed);
  EXPECT_TRUE(Sent().empty());
}

TEST_F(RunMonitorTest, ACancelIsSentOnceThenResentThenGivenUp) {
  exec::CancelToken cancel;
  RunMonitor monitor("run-1", Clock::now() + std::chrono::hours(1), Sender());
  monitor.Watch(cancel);
  cancel.Cancel();
  ASSERT_EQ(Sent().size(), 1u);
  EXPECT_EQ(Sent()[0], json::parse(R"({"op":"cancel","id":"run-1"})"));
  const auto now = Clock::now();
  EXPECT_EQ(monitor.Poll(now), RunMonitor::State::kRunning);
  EXPECT_EQ(Sent().size(), 1u);
  // It may have crossed the run op: sent once more.
  EXPECT_EQ(monitor.Poll(now + RunMonitor::kCancelResend + std::chrono::milliseconds(50)),
            RunMonitor::State::kRunning);
  EXPECT_EQ(Sent().size(), 2u);
  EXPECT_EQ(monitor.Poll(now + std::chrono::milliseconds(600)), RunMonitor::State::kRunning);
  EXPECT_EQ(Sent().size(), 2u);
  EXPECT_EQ(monitor.Poll(now + RunMonitor::kCancelGiveUp + std::chrono::milliseconds(50)),
            RunMonitor::State::kCancelUnanswered);
}

TEST_F(RunMonitorTest, InputRepliesReachTheHarnessOnlyDuringTheRun) {
  exec::InputReply reply;
  exec::InputReply late;
  {
    RunMonitor monitor("run-1", Clock::now() + std::chrono::hours(1), Sender());
    reply = monitor.ReplyTo(1);
    late = monitor.ReplyTo(2);
    reply("yes");
  }  // the run is over
  late(std::nullopt);
  ASSERT_EQ(Sent().size(), 1u);
  EXPECT_EQ(Sent()[0], json::parse(R"({"op":"input_reply","id":"run-1","seq":1,"line":"yes"})"));
}

TEST_F(RunMonitorTest, ACancelAfterTheRunGoesNowhere) {
  exec::CancelToken cancel;
  {
    RunMonitor monitor("run-1", Clock::now() + std::chrono::hours(1), Sender());
    monitor.Watch(cancel);
  }
  cancel.Cancel();
  EXPECT_TRUE(Sent().empty());
}

}  // namespace
}  // namespace sandbox::runner
