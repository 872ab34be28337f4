// SseChannel's bound (issue 34): a reader that falls behind is dropped with a last event that
// says why, what it was owed is freed at once, the run behind the stream hears of it (the
// abandon callback), and every queued byte counts in the server-wide budget until written.
#include "sandbox/http/sse_channel.h"

#include <gtest/gtest.h>

#include <string>

#include "sandbox/core/byte_budget.h"

namespace sandbox::http {
namespace {

using std::chrono::milliseconds;

std::string Event(std::size_t bytes) { return FormatSseEvent("message", std::string(bytes, 'x')); }

TEST(SseChannelTest, AReaderThatKeepsUpGetsEveryEventAndTheEnd) {
  SseChannel channel(SseChannelLimits{.max_queued_bytes = 1024, .budget = nullptr});
  ASSERT_TRUE(channel.Push(Event(100)));
  ASSERT_TRUE(channel.Push(Event(100)));
  std::string out;
  ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
  EXPECT_EQ(out, Event(100) + Event(100));
  // Taken bytes leave the queue: the bound is on what waits unread.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(channel.Push(Event(500))) << i;
    ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
  }
  channel.Close();
  EXPECT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kClosed);
  EXPECT_FALSE(channel.overflowed());
}

TEST(SseChannelTest, AStalledReaderIsDroppedWithALastEventAndWhatItWasOwedIsFreed) {
  const std::size_t bound = 4 * Event(1000).size();
  SseChannel channel(SseChannelLimits{.max_queued_bytes = bound, .budget = nullptr});
  int abandoned = 0;
  channel.OnAbandon([&] { ++abandoned; });
  int accepted = 0;
  while (channel.Push(Event(1000))) {
    ++accepted;
    ASSERT_LT(accepted, 100) << "the queue grew without a bound";
  }
  // The queue took events while fewer than `bound` bytes waited, then dropped the reader.
  EXPECT_EQ(accepted, 4);
  EXPECT_TRUE(channel.overflowed());
  EXPECT_EQ(abandoned, 1);
  EXPECT_LT(channel.held_bytes(), 1000u);  // only the last event is left
  EXPECT_FALSE(channel.Push(Event(10)));   // later pushes fail
  std::string out;
  ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
  EXPECT_EQ(out.rfind("event: error\ndata: ", 0), 0u) << out;
  EXPECT_NE(out.find("fell behind"), std::string::npos) << out;
  EXPECT_NE(out.find("memory.stream_queue_bytes"), std::string::npos) << out;
  EXPECT_EQ(out.find("xxxx"), std::string::npos) << "an owed event was kept";
  EXPECT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kClosed);
  channel.Abandon();  // the writer's end after a failed write: the callback ran already
  EXPECT_EQ(abandoned, 1);
}

TEST(SseChannelTest, OneEventLargerThanTheBoundReachesAReaderThatKeepsUp) {
  SseChannel channel(SseChannelLimits{.max_queued_bytes = 1024, .budget = nullptr});
  ASSERT_TRUE(channel.Push(Event(100)));     // a notification not taken yet
  ASSERT_TRUE(channel.Push(Event(100000)));  // the result
  std::string out;
  ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
  EXPECT_EQ(out.size(), Event(100).size() + Event(100000).size());
  EXPECT_FALSE(channel.overflowed());
  // Behind a large event still unread, the next push drops the reader.
  ASSERT_TRUE(channel.Push(Event(5000)));
  EXPECT_FALSE(channel.Push(Event(10)));
  EXPECT_TRUE(channel.overflowed());
}

TEST(SseChannelTest, TheOwnerChoosesTheLastEvent) {
  SseChannel channel(
      SseChannelLimits{.max_queued_bytes = 10, .budget = nullptr},
      [](const std::string& reason) { return "event: bye\ndata: " + reason + "\n\n"; });
  ASSERT_TRUE(channel.Push(Event(100)));
  EXPECT_FALSE(channel.Push(Event(100)));
  std::string out;
  ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
  EXPECT_EQ(out.rfind("event: bye\ndata: the client fell behind", 0), 0u) << out;
}

TEST(SseChannelTest, QueuedAndWrittenBytesCountInTheBudgetUntilWritten) {
  ByteBudget budget(1 << 20);
  {
    SseChannel channel(SseChannelLimits{.max_queued_bytes = 1 << 20, .budget = &budget});
    const std::string event = Event(1000);
    ASSERT_TRUE(channel.Push(event));
    ASSERT_TRUE(channel.Push(event));
    EXPECT_EQ(budget.in_use(), static_cast<std::int64_t>(2 * event.size()));
    std::string out;
    ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
    // Being written: still held.
    EXPECT_EQ(budget.in_use(), static_cast<std::int64_t>(2 * event.size()));
    ASSERT_TRUE(channel.Push(event));
    EXPECT_EQ(budget.in_use(), static_cast<std::int64_t>(3 * event.size()));
    // The writer is back for more: what it wrote is given back.
    ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
    EXPECT_EQ(budget.in_use(), static_cast<std::int64_t>(event.size()));
    channel.Close();
    EXPECT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kClosed);
    EXPECT_EQ(budget.in_use(), 0);
  }
  {
    SseChannel channel(SseChannelLimits{.max_queued_bytes = 1 << 20, .budget = &budget});
    ASSERT_TRUE(channel.Push(Event(1000)));
    channel.Abandon();  // the peer went away: everything is given back
    EXPECT_EQ(budget.in_use(), 0);
  }
  EXPECT_EQ(budget.in_use(), 0);
}

TEST(SseChannelTest, AnEventTheBudgetCannotHoldDropsTheReaderNamingTheBudget) {
  ByteBudget budget(64 << 10);
  auto other = budget.TryReserve(60 << 10);  // other clients hold most of it
  ASSERT_TRUE(other);
  SseChannel channel(SseChannelLimits{.max_queued_bytes = 1 << 20, .budget = &budget});
  int abandoned = 0;
  channel.OnAbandon([&] { ++abandoned; });
  ASSERT_TRUE(channel.Push(Event(1000)));
  EXPECT_FALSE(channel.Push(Event(10000)));
  EXPECT_EQ(abandoned, 1);
  EXPECT_EQ(budget.in_use(), 60 << 10);  // the queued event was given back
  std::string out;
  ASSERT_EQ(channel.Take(out, milliseconds(0)), SseChannel::Next::kData);
  EXPECT_NE(out.find("memory.inflight_bytes"), std::string::npos) << out;
}

}  // namespace
}  // namespace sandbox::http
