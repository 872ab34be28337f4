#include "sandbox/core/json_size.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace sandbox {
namespace {

// The size nlohmann::json writes, without the quotes: what the accounting must match.
std::size_t Dumped(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false).size() - 2;
}

TEST(JsonSizeTest, EscapedBytesMatchTheSerializer) {
  std::string every;
  for (int c = 0; c < 0x80; ++c) every.push_back(static_cast<char>(c));
  every += "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";  // é € 😀 stay raw
  EXPECT_EQ(JsonEscapedBytes(every), Dumped(every));
  EXPECT_EQ(JsonEscapedBytes(std::string(1000, '\x01')), 6000u);
  EXPECT_EQ(JsonEscapedBytes("a\nb\"c\\"), 9u);
  EXPECT_EQ(JsonEscapedBytes(""), 0u);
}

TEST(JsonSizeTest, PrefixStaysWithinAndOnCharacters) {
  const std::string text = "ab\x01\xc3\xa9z";  // a b \u0001 é z: 1+1+6+2+1
  EXPECT_EQ(JsonPrefixWithin(text, 100), text.size());
  EXPECT_EQ(JsonPrefixWithin(text, 7), 2u);  // \u0001 does not fit whole
  EXPECT_EQ(JsonPrefixWithin(text, 8), 3u);
  EXPECT_EQ(JsonPrefixWithin(text, 9), 3u);  // é is not cut in two
  EXPECT_EQ(JsonPrefixWithin(text, 10), 5u);
  EXPECT_EQ(JsonPrefixWithin(text, 0), 0u);
  for (std::size_t max = 0; max < 14; ++max) {
    EXPECT_LE(JsonEscapedBytes(std::string_view(text).substr(0, JsonPrefixWithin(text, max))), max);
  }
}

TEST(JsonSizeTest, SuffixStaysWithinAndOnCharacters) {
  const std::string text = "a\xc3\xa9\x01z";
  EXPECT_EQ(JsonSuffixWithin(text, 100), 0u);
  EXPECT_EQ(JsonSuffixWithin(text, 1), 4u);  // "z"
  EXPECT_EQ(JsonSuffixWithin(text, 7), 3u);  // \u0001 z
  EXPECT_EQ(JsonSuffixWithin(text, 8), 3u);  // half of é would fit: not taken
  EXPECT_EQ(JsonSuffixWithin(text, 9), 1u);
}

TEST(JsonSizeTest, Base64Bytes) {
  EXPECT_EQ(Base64Bytes(0), 0u);
  EXPECT_EQ(Base64Bytes(1), 4u);
  EXPECT_EQ(Base64Bytes(3), 4u);
  EXPECT_EQ(Base64Bytes(4), 8u);
}

}  // namespace
}  // namespace sandbox
