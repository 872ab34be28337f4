#include "sandbox/mcp/request_notifier.h"

#include <gtest/gtest.h>

#include "unit/mcp/test_util.h"

namespace sandbox::mcp {
namespace {

using testing::RecordingOutbound;

TEST(RequestNotifierTest, SendsProgressAndLogsUntilTheRequestIsCancelled) {
  RecordingOutbound out;
  exec::CancelToken cancel;
  RequestNotifier notifier(out, "t", LogLevel::kDebug, &cancel);
  notifier.Progress("before");
  notifier.Log(LogLevel::kInfo, "stdout", "before");
  ASSERT_EQ(out.WithMethod("notifications/progress").size(), 1u);
  ASSERT_EQ(out.WithMethod("notifications/message").size(), 1u);

  // Found by the soak: a cancelled run still being torn down kept sending heartbeats, and the
  // SDK reported "progress notification for an unknown token".
  cancel.Cancel();
  notifier.Progress("still running (20 s)");
  notifier.ProgressValue(5, 10, "after");
  notifier.Log(LogLevel::kWarning, "stderr", "after");
  EXPECT_EQ(out.WithMethod("notifications/progress").size(), 1u);
  EXPECT_EQ(out.WithMethod("notifications/message").size(), 1u);
}

TEST(RequestNotifierTest, WithoutATokenNothingIsEverSuppressed) {
  RecordingOutbound out;
  RequestNotifier notifier(out, "t", std::nullopt);
  notifier.Progress("a");
  notifier.Progress("b");
  EXPECT_EQ(out.WithMethod("notifications/progress").size(), 2u);
}

}  // namespace
}  // namespace sandbox::mcp
