#include "metrics/process_stats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace sandbox::metrics {
namespace {

TEST(ProcessStatsTest, ParsesStatWithAnAwkwardCommandName) {
  // Fields 3..24 of proc(5) after "pid (comm)"; comm holds a space and a ')'.
  const char* stat =
      "4242 (sandbox ) mcp) S 1 4242 4242 0 -1 4194560 500 0 0 0 "
      "150 25 0 0 20 0 78 0 123456 987654321 2048 18446744073709551615\n";
  auto fields = ParseStat(stat);
  ASSERT_TRUE(fields.has_value());
  EXPECT_EQ(fields->utime_ticks, 150);
  EXPECT_EQ(fields->stime_ticks, 25);
  EXPECT_EQ(fields->threads, 78);
  EXPECT_EQ(fields->start_ticks, 123456);
  EXPECT_EQ(fields->vsize_bytes, 987654321);
  EXPECT_EQ(fields->rss_pages, 2048);
  EXPECT_FALSE(ParseStat("4242 (x) S 1 2").has_value());
  EXPECT_FALSE(ParseStat("no parenthesis").has_value());
}

TEST(ProcessStatsTest, ParsesBootTime) {
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nbtime 1764800000\nprocesses 9\n"), 1764800000);
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\n"), std::nullopt);
}

TEST(ProcessStatsTest, ReadsThisProcess) {
  auto stats = ReadProcessStats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->resident_bytes, 0);
  EXPECT_GE(stats->threads, 1);
  EXPECT_GE(stats->open_fds, 3);  // stdin, stdout, stderr at least
  EXPECT_GT(stats->max_fds, 0);
  EXPECT_GT(stats->start_time_seconds, 1.5e9);
}

TEST(ProcessStatsTest, HeapStatsFollowAnAllocationAndItsRelease) {
  const auto before = ReadHeapStats();
  if (!before) GTEST_SKIP() << "no glibc allocator figures in this build (a sanitizer's own)";
  constexpr std::int64_t kBytes = std::int64_t{64} << 20;  // past any mmap threshold
  auto block = std::make_unique<char[]>(kBytes);
  // Written through a volatile pointer: the compiler may not drop the allocation.
  char* volatile kept = block.get();
  std::memset(kept, 1, kBytes);
  const auto during = ReadHeapStats();
  ASSERT_TRUE(during.has_value());
  EXPECT_GE(during->in_use_bytes - before->in_use_bytes, kBytes);
  EXPECT_GE(during->mmapped_bytes, kBytes);
  EXPECT_GE(during->arena_bytes, 0);
  block.reset();
  const auto after = ReadHeapStats();
  ASSERT_TRUE(after.has_value());
  EXPECT_LE(after->in_use_bytes, during->in_use_bytes - kBytes);
}

}  // namespace
}  // namespace sandbox::metrics
