#include "sandbox/mcp/output_relay.h"

#include <gtest/gtest.h>

#include "conformance/conformance_tools.h"
#include "unit/mcp/test_util.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

using testing::RecordingOutbound;

std::string Messages(const RecordingOutbound& out) {
  std::string all;
  for (const auto& m : out.WithMethod("notifications/progress")) {
    all += m["params"].value("message", "");
  }
  return all;
}

TEST(OutputRelayTest, InactiveWithoutTokenOrLogLevel) {
  RecordingOutbound out;
  RequestNotifier notifier(out, nullptr, std::nullopt);
  OutputRelay relay(notifier, RelayOptions{});
  EXPECT_FALSE(relay.active());
  relay.OnOutput(exec::Stream::kStdout, "x");
  relay.Finish();
  EXPECT_TRUE(out.messages().empty());
}

TEST(OutputRelayTest, CoalescesAFloodIntoFewNotifications) {
  RecordingOutbound out;
  RequestNotifier notifier(out, "t", std::nullopt);
  RelayOptions options;
  options.coalesce = std::chrono::hours(1);  // nothing leaves before Finish
  options.heartbeat = std::chrono::hours(1);
  options.flush_bytes = 1 << 30;
  OutputRelay relay(notifier, options);
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    relay.OnOutput(exec::Stream::kStdout, "line " + std::to_string(i) + "\n");
    expected += "line " + std::to_string(i) + "\n";
  }
  relay.Finish();
  ASSERT_EQ(out.messages().size(), 1u);
  EXPECT_EQ(Messages(out), expected);
}

TEST(OutputRelayTest, FlushesEarlyWhenPendingOutputIsLarge) {
  RecordingOutbound out;
  RequestNotifier notifier(out, "t", std::nullopt);
  RelayOptions options;
  options.coalesce = std::chrono::hours(1);
  options.heartbeat = std::chrono::hours(1);
  options.flush_bytes = 10;
  OutputRelay relay(notifier, options);
  relay.OnOutput(exec::Stream::kStdout, "0123456789abc\n");
  ASSERT_TRUE(out.WaitFor(1));  // before Finish: the size threshold flushed it
  relay.Finish();
  EXPECT_EQ(Messages(out), "0123456789abc\n");
}

TEST(OutputRelayTest, KeepsACharacterSplitAcrossChunksWhole) {
  RecordingOutbound out;
  RequestNotifier notifier(out, "t", std::nullopt);
  RelayOptions options;
  options.coalesce = std::chrono::milliseconds(0);
  OutputRelay relay(notifier, options);
  relay.OnOutput(exec::Stream::kStdout, "price: \xE2\x82");
  relay.OnOutput(exec::Stream::kStdout,
                 "\xAC"
                 "5\n");
  relay.Finish();
  EXPECT_EQ(Messages(out),
            "price: \xE2\x82\xAC"
            "5\n");
}

TEST(OutputRelayTest, InvalidBytesBecomeReplacementCharacters) {
  RecordingOutbound out;
  RequestNotifier notifier(out, "t", std::nullopt);
  OutputRelay relay(notifier, RelayOptions{});
  relay.OnOutput(exec::Stream::kStdout,
                 "a\xff\xfe"
                 "b");
  relay.Finish();
  EXPECT_EQ(Messages(out),
            "a\xEF\xBF\xBD\xEF\xBF\xBD"
            "b");
}

TEST(OutputRelayTest, SilentRunsStillSendProgress) {
  RecordingOutbound out;
  RequestNotifier notifier(out, 42, std::nullopt);
  RelayOptions options;
  options.heartbeat = std::chrono::milliseconds(5);
  OutputRelay relay(notifier, options);
  ASSERT_TRUE(out.WaitFor(3));
  relay.Finish();
  auto progress = out.WithMethod("notifications/progress");
  ASSERT_GE(progress.size(), 3u);
  for (std::size_t i = 1; i < progress.size(); ++i) {
    EXPECT_GT(progress[i]["params"]["progress"].get<double>(),
              progress[i - 1]["params"]["progress"].get<double>());
  }
  EXPECT_EQ(progress[0]["params"]["progressToken"], 42);
  EXPECT_NE(progress[0]["params"]["message"].get<std::string>().find("still running"),
            std::string::npos);
}

TEST(OutputRelayTest, LiveOutputStopsAtItsCap) {
  RecordingOutbound out;
  RequestNotifier notifier(out, "t", std::nullopt);
  RelayOptions options;
  options.max_live_bytes = 8;
  OutputRelay relay(notifier, options);
  relay.OnOutput(exec::Stream::kStdout, "0123456789");
  relay.OnOutput(exec::Stream::kStderr, "more");
  relay.Finish();
  std::string all = Messages(out);
  EXPECT_EQ(all.substr(0, 8), "01234567");
  EXPECT_NE(all.find("live output stopped"), std::string::npos);
  EXPECT_EQ(all.find("more"), std::string::npos);
}

TEST(RequestNotifierTest, ExplicitProgressValuesStayStrictlyIncreasing) {
  RecordingOutbound out;
  RequestNotifier notifier(out, "t", std::nullopt);
  notifier.ProgressValue(0, 100, "");
  notifier.ProgressValue(0, 100, "");
  notifier.Progress("x");
  auto p = out.WithMethod("notifications/progress");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0]["params"]["progress"], 0);
  EXPECT_EQ(p[0]["params"]["total"], 100);
  EXPECT_EQ(p[1]["params"]["progress"], 1);
  EXPECT_EQ(p[2]["params"]["progress"], 2);
}

TEST(ConformanceToolsTest, ProvidesTheSuitesFixtureNames) {
  auto tools = testing::MakeConformanceTools();
  std::vector<std::string> names;
  for (const auto& t : tools) names.push_back(t->name());
  for (auto expected :
       {"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
        "test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress",
        "test_error_handling", "json_schema_2020_12_tool"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

}  // namespace
}  // namespace sandbox::mcp
