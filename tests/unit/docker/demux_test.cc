#include "sandbox/docker/demux.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandbox::docker {
namespace {

std::string Frame(unsigned char type, const std::string& payload) {
  auto n = static_cast<std::uint32_t>(payload.size());
  std::string h = {static_cast<char>(type),
                   '\0',
                   '\0',
                   '\0',
                   static_cast<char>(n >> 24),
                   static_cast<char>((n >> 16) & 0xFF),
                   static_cast<char>((n >> 8) & 0xFF),
                   static_cast<char>(n & 0xFF)};
  return h + payload;
}

struct Collected {
  std::string out;
  std::string err;
};

Collected Join(const std::vector<StreamChunk>& chunks) {
  Collected c;
  for (const auto& chunk : chunks) {
    EXPECT_FALSE(chunk.data.empty()) << "empty chunks must not be emitted";
    (chunk.stream == StreamKind::kStdout ? c.out : c.err) += chunk.data;
  }
  return c;
}

TEST(DemuxTest, SplitAtEveryBytePosition) {
  const std::string stream = Frame(1, "hello ") + Frame(2, "oops\n") + Frame(1, "") +
                             Frame(1, "world\n") + Frame(2, "") + Frame(2, "bye");
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    for (std::size_t j = i; j <= stream.size(); j += 3) {
      Demuxer d;
      std::vector<StreamChunk> chunks;
      ASSERT_TRUE(d.Feed(std::string_view(stream).substr(0, i), chunks).ok());
      ASSERT_TRUE(d.Feed(std::string_view(stream).substr(i, j - i), chunks).ok());
      ASSERT_TRUE(d.Feed(std::string_view(stream).substr(j), chunks).ok());
      Collected c = Join(chunks);
      EXPECT_EQ(c.out, "hello world\n") << "split at " << i << "," << j;
      EXPECT_EQ(c.err, "oops\nbye") << "split at " << i << "," << j;
      EXPECT_TRUE(d.AtFrameBoundary());
    }
  }
}

TEST(DemuxTest, ByteByByte) {
  const std::string stream = Frame(1, "abc") + Frame(2, "de") + Frame(1, "f");
  Demuxer d;
  std::vector<StreamChunk> chunks;
  for (char c : stream) ASSERT_TRUE(d.Feed(std::string_view(&c, 1), chunks).ok());
  Collected c = Join(chunks);
  EXPECT_EQ(c.out, "abcf");
  EXPECT_EQ(c.err, "de");
}

TEST(DemuxTest, LargeFrameStreamsWithoutWaitingForTheWholeFrame) {
  std::string payload(1 << 20, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7 + 3);
  const std::string stream = Frame(2, payload) + Frame(1, "tail");
  Demuxer d;
  std::vector<StreamChunk> chunks;
  // The header and the first 100 bytes already yield 100 bytes of stderr.
  ASSERT_TRUE(d.Feed(std::string_view(stream).substr(0, 108), chunks).ok());
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].data.size(), 100u);
  EXPECT_FALSE(d.AtFrameBoundary());
  for (std::size_t pos = 108; pos < stream.size(); pos += 4093) {
    ASSERT_TRUE(d.Feed(std::string_view(stream).substr(pos, 4093), chunks).ok());
  }
  Collected c = Join(chunks);
  EXPECT_EQ(c.err, payload);
  EXPECT_EQ(c.out, "tail");
  EXPECT_TRUE(d.AtFrameBoundary());
}

TEST(DemuxTest, EmptyFramesProduceNothing) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  ASSERT_TRUE(d.Feed(Frame(1, "") + Frame(2, "") + Frame(1, ""), chunks).ok());
  EXPECT_TRUE(chunks.empty());
  EXPECT_TRUE(d.AtFrameBoundary());
}

TEST(DemuxTest, InterleavedStreamsKeepTheirOrder) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  ASSERT_TRUE(
      d.Feed(Frame(1, "o1") + Frame(1, "o2") + Frame(2, "e1") + Frame(1, "o3") + Frame(2, "e2"),
             chunks)
          .ok());
  std::vector<StreamChunk> want = {{StreamKind::kStdout, "o1o2"},
                                   {StreamKind::kStderr, "e1"},
                                   {StreamKind::kStdout, "o3"},
                                   {StreamKind::kStderr, "e2"}};
  EXPECT_EQ(chunks, want);
}

TEST(DemuxTest, DoesNotAppendToChunksFromAnEarlierCall) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  ASSERT_TRUE(d.Feed(Frame(1, "a"), chunks).ok());
  ASSERT_TRUE(d.Feed(Frame(1, "b"), chunks).ok());
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[1].data, "b");
}

TEST(DemuxTest, StdinFrameTypeCountsAsStdout) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  ASSERT_TRUE(d.Feed(Frame(0, "x"), chunks).ok());
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].stream, StreamKind::kStdout);
}

TEST(DemuxTest, CorruptHeaderIsAStickyProtocolError) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  std::string bad = Frame(1, "ok");
  bad += std::string("\x01\x05\x00\x00\x00\x00\x00\x01z", 9);  // nonzero padding byte
  Status s = d.Feed(bad, chunks);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kProtocol);
  ASSERT_EQ(chunks.size(), 1u);  // the good frame before it is still delivered
  EXPECT_EQ(chunks[0].data, "ok");
  Status again = d.Feed(Frame(1, "more"), chunks);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(chunks.size(), 1u);
}

TEST(DemuxTest, UnknownTypeIsCorrupt) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  Status s = d.Feed(Frame(7, "x"), chunks);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kProtocol);
}

TEST(DemuxTest, TtyTextIsReportedAsCorruptInMultiplexedMode) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  EXPECT_FALSE(d.Feed("hello world\n", chunks).ok());
}

TEST(DemuxTest, SystemErrorFrameBecomesEngineError) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  std::string stream = Frame(1, "out") + Frame(3, "exec failed");
  ASSERT_TRUE(d.Feed(std::string_view(stream).substr(0, 15), chunks).ok());
  Status s = d.Feed(std::string_view(stream).substr(15), chunks);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kEngine);
  EXPECT_NE(s.error().message().find("exec failed"), std::string::npos);
}

TEST(DemuxTest, TruncatedStreamIsNotAtFrameBoundary) {
  Demuxer d;
  std::vector<StreamChunk> chunks;
  std::string f = Frame(1, "abcdef");
  ASSERT_TRUE(d.Feed(std::string_view(f).substr(0, 4), chunks).ok());
  EXPECT_FALSE(d.AtFrameBoundary());
  ASSERT_TRUE(d.Feed(std::string_view(f).substr(4, 6), chunks).ok());
  EXPECT_FALSE(d.AtFrameBoundary());
}

TEST(DemuxTest, RawModePassesBytesThrough) {
  Demuxer d(Demuxer::Mode::kRaw);
  std::vector<StreamChunk> chunks;
  std::string bytes("\x01\x00\x00\x00tty", 7);
  ASSERT_TRUE(d.Feed(bytes, chunks).ok());
  ASSERT_TRUE(d.Feed("", chunks).ok());
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].stream, StreamKind::kStdout);
  EXPECT_EQ(chunks[0].data, bytes);
  EXPECT_TRUE(d.AtFrameBoundary());
}

}  // namespace
}  // namespace sandbox::docker
