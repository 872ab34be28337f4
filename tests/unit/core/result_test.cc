#include "sandbox/core/result.h"

#include <gtest/gtest.h>

#include <string>

namespace sandbox {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Error(ErrorCode::kInvalidArgument, "odd: " + std::to_string(x));
  return x / 2;
}

Status Chain(int x) {
  SANDBOX_RETURN_IF_ERROR(Half(x));
  return OkStatus();
}

TEST(ResultTest, HoldsValueOrError) {
  auto ok = Half(4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  auto bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "odd: 3");
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(ResultTest, ReturnIfErrorPropagates) {
  EXPECT_TRUE(Chain(2).ok());
  auto status = Chain(5);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message(), "odd: 5");
}

TEST(ErrorTest, ToStringNamesCodeAndStatus) {
  Error e(ErrorCode::kEngine, "No such image: x", 404);
  EXPECT_EQ(e.ToString(), "engine (HTTP 404): No such image: x");
  EXPECT_EQ(e.WithContext("create").message(), "create: No such image: x");
  EXPECT_EQ(e.WithContext("create").http_status(), 404);
}

}  // namespace
}  // namespace sandbox
