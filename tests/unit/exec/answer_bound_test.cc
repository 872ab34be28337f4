#include "sandbox/exec/answer_bound.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "sandbox/core/json_size.h"
#include "sandbox/core/utf8.h"

namespace sandbox::exec {
namespace {

std::size_t Bound(std::size_t raw) { return kOutputEscapeFactor * raw + kOutputEscapeSlack; }

TEST(AnswerBoundTest, OrdinaryTextIsNeverCut) {
  // Every line a newline, quotes and backslashes: twice its size at most.
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "\"\\\n";
  const std::string before = text;
  EXPECT_FALSE(BoundOutputText(text));
  EXPECT_EQ(text, before);
}

TEST(AnswerBoundTest, ControlBytesAreCutAtTheEscapedBound) {
  // The case, smaller: control bytes escape to six characters each.
  std::string text(1 << 20, '\x01');
  EXPECT_TRUE(BoundOutputText(text));
  EXPECT_LE(JsonEscapedBytes(text), Bound(1 << 20));
  EXPECT_GT(JsonEscapedBytes(text), Bound(1 << 20) - 16);  // cut at the bound, not far before
  EXPECT_NE(text.find(kEscapeCutMarker), std::string::npos);
}

TEST(AnswerBoundTest, InvalidUtf8IsRepairedAndBounded) {
  std::string text(300000, '\xff');  // each byte becomes U+FFFD (three bytes)
  EXPECT_TRUE(BoundOutputText(text));
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_LE(JsonEscapedBytes(text), Bound(300000));
}

TEST(AnswerBoundTest, AFewControlBytesStayWhole) {
  std::string text = "\a\x1b[31mred\x1b[0m\n";
  const std::string before = text;
  EXPECT_FALSE(BoundOutputText(text));  // the slack keeps short output whole
  EXPECT_EQ(text, before);
}

TEST(AnswerBoundTest, ResultOutputSetsTruncated) {
  RunResult r;
  r.stdout_text = "fine\n";
  r.stderr_text = std::string(100000, '\x02');
  BoundResultOutput(r);
  EXPECT_TRUE(r.output_truncated);
  EXPECT_EQ(r.stdout_text, "fine\n");
}

TEST(AnswerBoundTest, AnswerBytesCountsBase64AndEscapes) {
  RunResult empty;
  const std::int64_t base = AnswerBytes(empty);
  RunResult r;
  r.stdout_text = std::string(3000, '\n');  // 6000 escaped
  Image image;
  image.data = std::string(3000, 'x');  // 4000 in base64
  r.images.push_back(image);
  OutputFile file;
  file.data = std::string(300, 'y');  // 400 in base64, as MCP text at most 2 x 300 + 64
  r.files.push_back(file);
  EXPECT_GE(AnswerBytes(r) - base, 6000 + 4000 + 664);
  EXPECT_LE(AnswerBytes(r) - base, 6000 + 4000 + 664 + 2048);
}

TEST(AnswerBoundTest, ReserveHoldsCopiesAndRefusesClearly) {
  ByteBudget budget(64 << 20);
  RunResult r;
  r.stdout_text = std::string(10 << 20, 'a');
  const AnswerBudget answers{&budget, std::chrono::milliseconds(0)};
  auto held = ReserveAnswer(answers, r);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->bytes(), kAnswerCopies * AnswerBytes(r));
  EXPECT_EQ(budget.in_use(), held->bytes());

  RunResult big;
  big.stdout_text = std::string(12 << 20, 'b');  // three copies do not fit beside the first
  auto refused = ReserveAnswer(answers, big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kBusy);
  EXPECT_NE(refused.error().message().find("memory.inflight_bytes"), std::string::npos);
  EXPECT_EQ(budget.refused(), 1);
  held->Release();
  EXPECT_EQ(budget.in_use(), 0);
  EXPECT_TRUE(ReserveAnswer(answers, big).ok());  // alone it fits
}

TEST(AnswerBoundTest, WithoutABudgetNothingIsHeldButOutputIsBounded) {
  RunResult r;
  r.stdout_text = std::string(100000, '\x03');
  auto held = ReserveAnswer(AnswerBudget{}, r);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->bytes(), 0);
  EXPECT_TRUE(r.output_truncated);
}

}  // namespace
}  // namespace sandbox::exec
