// FormatRunResult's bounds: the output travels once in full (structuredContent), the text block
// repeats at most exec::kTextBlockOutputBytes of it, and dropped figures are said.
#include "mcp/run_result_format.h"

#include <gtest/gtest.h>

#include <string>

#include "sandbox/core/json_size.h"
#include "sandbox/exec/answer_bound.h"
#include "sandbox/mcp/resource_provider.h"

namespace sandbox::mcp {
namespace {

using nlohmann::json;

std::string TextBlock(const json& result) { return result["content"][0]["text"]; }

TEST(RunResultFormatTest, ShortOutputIsInBothPlaces) {
  exec::RunResult r;
  r.verdict = exec::Verdict::kOk;
  r.exit_code = 0;
  r.stdout_text = "hello\n";
  json result = FormatRunResult(r, "run1");
  EXPECT_EQ(result["structuredContent"]["stdout"], "hello\n");
  EXPECT_NE(TextBlock(result).find("hello\n"), std::string::npos);
  EXPECT_FALSE(result["structuredContent"].contains("images_truncated"));
}

TEST(RunResultFormatTest, LongOutputIsNotRepeatedInFull) {
  exec::RunResult r;
  r.verdict = exec::Verdict::kError;
  r.stdout_text = "first line\n" + std::string(1 << 20, 'x') + "\nlast line\n";
  r.stderr_text = std::string(200000, 'e') + "\nValueError: the end\n";
  const std::string out = r.stdout_text;
  const std::string err = r.stderr_text;
  json result = FormatRunResult(r, "run1");
  EXPECT_EQ(result["structuredContent"]["stdout"], out);
  EXPECT_EQ(result["structuredContent"]["stderr"], err);
  const std::string text = TextBlock(result);
  EXPECT_LE(JsonEscapedBytes(text), exec::kTextBlockOutputBytes + 4096);
  // Head and tail of each, and where the rest is.
  EXPECT_NE(text.find("first line"), std::string::npos);
  EXPECT_NE(text.find("last line"), std::string::npos);
  EXPECT_NE(text.find("ValueError: the end"), std::string::npos);
  EXPECT_NE(text.find("structuredContent.stdout has the whole output"), std::string::npos);
  EXPECT_NE(text.find("structuredContent.stderr has the whole output"), std::string::npos);
  // The whole answer: the output once, plus the bounded repeat.
  EXPECT_LE(result.dump().size(), out.size() + err.size() + exec::kTextBlockOutputBytes + 8192);
}

TEST(RunResultFormatTest, ExcerptIsWholeOrWithinItsBound) {
  EXPECT_EQ(TextBlockExcerpt("short", 100, "stdout"), "short");
  const std::string controls(10000, '\x01');
  const std::string shown = TextBlockExcerpt(controls, 6000, "stdout");
  EXPECT_LE(JsonEscapedBytes(shown), 6000u + 200);
}

TEST(RunResultFormatTest, DroppedFiguresAreSaid) {
  exec::RunResult r;
  r.verdict = exec::Verdict::kOk;
  r.images_truncated = true;
  json result = FormatRunResult(r, "run1");
  EXPECT_EQ(result["structuredContent"]["images_truncated"], true);
  EXPECT_NE(TextBlock(result).find("figures dropped"), std::string::npos);
  EXPECT_TRUE(RunPythonOutputSchema()["properties"].contains("images_truncated"));
}

TEST(RunResultFormatTest, ControlByteTextFilesGoAsBase64) {
  // Valid UTF-8 of a text type, but escaped it would be six times its size.
  EXPECT_FALSE(IsTextContent("text/plain", std::string(1000, '\x01')));
  EXPECT_TRUE(IsTextContent("text/plain", "a\tb\nc\n"));
  EXPECT_TRUE(IsTextContent("text/csv", std::string(5000, '\n')));  // twice: still text
  json contents = ResourceContents("sandbox://x", "text/plain", std::string(3000, '\x01'));
  EXPECT_TRUE(contents.contains("blob"));
  EXPECT_LE(contents.dump().size(), 4000u + 100);
}

}  // namespace
}  // namespace sandbox::mcp
