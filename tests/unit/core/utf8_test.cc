#include "sandbox/core/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace sandbox {
namespace {

TEST(Utf8Test, RepairsInvalidSequencesWithReplacementCharacters) {
  const std::string kFffd = "\xEF\xBF\xBD";
  EXPECT_EQ(RepairUtf8("plain"), "plain");
  EXPECT_EQ(RepairUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(RepairUtf8("a\xff"
                       "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(RepairUtf8("\xC0\xAF"), kFffd + kFffd);               // overlong
  EXPECT_EQ(RepairUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);   // surrogate
  EXPECT_EQ(RepairUtf8("\xE2\x82"), kFffd);                       // truncated: one maximal subpart
  EXPECT_EQ(RepairUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // emoji intact
  EXPECT_TRUE(IsValidUtf8(RepairUtf8(std::string("\x80\xBF\xFE\xF5\xF4\x90\x80\x80", 8))));
}

TEST(Utf8Test, CompletePrefixStopsBeforeAnUnfinishedCharacter) {
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xE2\x82"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xE2\x82\xAC"), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xff"), 2u);  // invalid, not unfinished: nothing to wait for
}

}  // namespace
}  // namespace sandbox
