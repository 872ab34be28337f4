#include "sandbox/core/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace sandbox {
namespace {

TEST(Base64Test, EncodesRfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, DecodesRfc4648Vectors) {
  for (const char* plain : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    Result<std::string> decoded = Base64Decode(Base64Encode(plain));
    ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
    EXPECT_EQ(*decoded, plain);
  }
}

TEST(Base64Test, RoundTripsEveryByteValue) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (std::size_t cut = 0; cut < 4; ++cut) {
    const std::string input = bytes.substr(cut);
    const std::string encoded = Base64Encode(input);
    EXPECT_NE(encoded.find('+'), std::string::npos);
    Result<std::string> decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
    EXPECT_EQ(*decoded, input);
  }
}

TEST(Base64Test, RejectsMalformedInput) {
  for (const char* bad : {"Zg=", "Zm9", "Z===", "Zm=v", "=Zm9", "Zm9v====", "Zm 9v", "Zm9v\n",
                          "Zm-_", "Zh==", "Zm9=", "Zg==Zg=="}) {
    Result<std::string> decoded = Base64Decode(bad);
    EXPECT_FALSE(decoded.ok()) << bad;
    if (!decoded.ok()) {
      EXPECT_EQ(decoded.error().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(decoded.error().message().find("invalid base64"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace sandbox
