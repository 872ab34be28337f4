#include "sandbox/runner/harness_frames.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandbox::runner {
namespace {

std::string Stream() {
  return EncodeFrame(FrameKind::kJson, R"({"ev":"ready"})") + EncodeFrame(FrameKind::kStdout, "") +
         EncodeFrame(FrameKind::kStdout, "hello\n") +
         EncodeFrame(FrameKind::kStderr, std::string(70000, 'e')) +
         EncodeFrame(FrameKind::kJson, R"({"ev":"done"})");
}

std::vector<Frame> DecodeInPieces(const std::string& bytes, std::size_t split) {
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (std::size_t pos = 0; pos < bytes.size(); pos += split) {
    EXPECT_TRUE(decoder.Feed(std::string_view(bytes).substr(pos, split)).ok());
    Frame f;
    while (decoder.Next(f)) frames.push_back(f);
  }
  EXPECT_TRUE(decoder.AtBoundary());
  return frames;
}

TEST(HarnessFramesTest, RoundTripAtEverySplit) {
  const std::string bytes = Stream();
  for (std::size_t split : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5},
                            std::size_t{7}, std::size_t{4096}, bytes.size()}) {
    auto frames = DecodeInPieces(bytes, split);
    ASSERT_EQ(frames.size(), 5u) << "split " << split;
    EXPECT_EQ(frames[0].kind, FrameKind::kJson);
    EXPECT_EQ(frames[0].payload, R"({"ev":"ready"})");
    EXPECT_EQ(frames[1].kind, FrameKind::kStdout);
    EXPECT_EQ(frames[1].payload, "");
    EXPECT_EQ(frames[2].payload, "hello\n");
    EXPECT_EQ(frames[3].kind, FrameKind::kStderr);
    EXPECT_EQ(frames[3].payload.size(), 70000u);
    EXPECT_EQ(frames[4].payload, R"({"ev":"done"})");
  }
}

TEST(HarnessFramesTest, SplitEveryBytePositionOfTwoFrames) {
  const std::string bytes =
      EncodeFrame(FrameKind::kStdout, "abc") + EncodeFrame(FrameKind::kJson, "{}");
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    FrameDecoder decoder;
    ASSERT_TRUE(decoder.Feed(bytes.substr(0, cut)).ok());
    ASSERT_TRUE(decoder.Feed(bytes.substr(cut)).ok());
    Frame a, b, c;
    ASSERT_TRUE(decoder.Next(a)) << cut;
    ASSERT_TRUE(decoder.Next(b)) << cut;
    EXPECT_FALSE(decoder.Next(c));
    EXPECT_EQ(a.payload, "abc");
    EXPECT_EQ(b.payload, "{}");
  }
}

TEST(HarnessFramesTest, RejectsUnknownKindAndOversizedFrames) {
  FrameDecoder decoder;
  std::string bad = EncodeFrame(FrameKind::kJson, "{}");
  bad[4] = 'X';
  auto status = decoder.Feed(bad);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kProtocol);
  EXPECT_FALSE(decoder.Feed(EncodeFrame(FrameKind::kJson, "{}")).ok());  // sticky

  FrameDecoder small(16);
  auto too_big = small.Feed(EncodeFrame(FrameKind::kStdout, std::string(17, 'x')));
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message().find("17"), std::string::npos);
}

}  // namespace
}  // namespace sandbox::runner
