#include "sandbox/core/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace sandbox {
namespace {

std::string Nested(int levels, char open = '[', char close = ']') {
  return std::string(static_cast<std::size_t>(levels), open) +
         std::string(static_cast<std::size_t>(levels), close);
}

TEST(JsonTest, AcceptsNestingUpToTheLimit) {
  auto parsed = ParseJson(Nested(kMaxJsonDepth));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_TRUE(parsed->is_array());
}

TEST(JsonTest, RefusesOneLevelMoreWithTheLimitInTheMessage) {
  auto parsed = ParseJson(Nested(kMaxJsonDepth + 1));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code(), ErrorCode::kLimit);
  EXPECT_THAT(parsed.error().message(), ::testing::HasSubstr("deeper than 64 levels"));
  EXPECT_THAT(parsed.error().message(), ::testing::HasSubstr("at byte 64"));
}

TEST(JsonTest, RefusesAHundredThousandLevelsWithoutBuildingATree) {
  // The attack of the issue: this used to overflow a worker's stack when copied or dumped.
  std::string text =
      R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":)" + Nested(100000) + "}}";
  auto parsed = ParseJson(text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code(), ErrorCode::kLimit);
}

TEST(JsonTest, MixedObjectsAndArraysCount) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += R"({"k":[)";
  text += "1";
  for (int i = 0; i < 40; ++i) text += "]}";
  EXPECT_FALSE(ParseJson(text).ok());  // 80 levels
  EXPECT_EQ(FindJsonDepthViolation(text, 80), std::nullopt);
}

TEST(JsonTest, BracketsInsideStringsDoNotCount) {
  std::string text = "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  auto parsed = ParseJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ((*parsed)[0].get<std::string>().size(), 2001U);
}

TEST(JsonTest, AnEscapedBackslashEndsTheStringAtTheNextQuote) {
  // "\\" is one backslash; the quote after it closes the string, so the brackets count.
  std::string text = "[\"\\\\\"," + Nested(kMaxJsonDepth) + "]";
  EXPECT_FALSE(ParseJson(text).ok());
}

TEST(JsonTest, UnbalancedClosersDoNotHideOpeners) {
  std::string text = std::string(10, ']') + Nested(kMaxJsonDepth + 1);
  EXPECT_TRUE(FindJsonDepthViolation(text, kMaxJsonDepth).has_value());
}

TEST(JsonTest, CommentsOnlyWhenAllowed) {
  std::string text = "// [[[[\n{\"a\": /* {{{{ */ 1}";
  EXPECT_FALSE(ParseJson(text).ok());
  auto parsed = ParseJson(text, {.max_depth = 1, .allow_comments = true});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ((*parsed)["a"], 1);
}

TEST(JsonTest, MalformedTextAndInvalidUtf8AreInvalidArgument) {
  for (std::string text : {std::string("{"), std::string("[1,]"), std::string("\"\xff\""),
                           std::string(""), std::string("nul")}) {
    auto parsed = ParseJson(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.error().message(), ::testing::StartsWith("invalid JSON"));
  }
}

TEST(JsonTest, JsonIntegerNamesOnlyIntegersThatFit) {
  using nlohmann::json;
  EXPECT_EQ(JsonInteger(json(42)), 42);
  EXPECT_EQ(JsonInteger(json(-7)), -7);
  EXPECT_EQ(JsonInteger(json::parse("5e8")), 500000000);
  EXPECT_EQ(JsonInteger(json::parse("9223372036854775807")), INT64_MAX);
  // Beyond int64, fractions, huge or non-finite doubles and other types name no integer
  // (get<std::int64_t>() on 1.1e301 is undefined behaviour: the fuzzer found it).
  EXPECT_EQ(JsonInteger(json::parse("9223372036854775808")), std::nullopt);
  EXPECT_EQ(JsonInteger(json(1.5)), std::nullopt);
  EXPECT_EQ(JsonInteger(json::parse("1.1e301")), std::nullopt);
  EXPECT_EQ(JsonInteger(json::parse("-1.1e301")), std::nullopt);
  EXPECT_EQ(JsonInteger(json(std::numeric_limits<double>::infinity())), std::nullopt);
  EXPECT_EQ(JsonInteger(json("12")), std::nullopt);
  EXPECT_EQ(JsonInteger(json(true)), std::nullopt);
}

}  // namespace
}  // namespace sandbox
