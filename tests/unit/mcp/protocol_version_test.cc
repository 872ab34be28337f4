#include "sandbox/mcp/protocol_version.h"

#include <gtest/gtest.h>

namespace sandbox::mcp {
namespace {

TEST(ProtocolVersionTest, EchoesSupportedVersionsAndOtherwiseAnswersTheLatest) {
  for (auto version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    EXPECT_EQ(NegotiateProtocolVersion(version), version);
  }
  EXPECT_EQ(NegotiateProtocolVersion("2099-01-01"), "2025-11-25");
  EXPECT_EQ(NegotiateProtocolVersion(""), "2025-11-25");
  EXPECT_TRUE(AllowsBatches("2025-03-26"));
  EXPECT_FALSE(AllowsBatches("2025-06-18"));
  EXPECT_FALSE(AllowsBatches("2024-11-05"));
}

}  // namespace
}  // namespace sandbox::mcp
