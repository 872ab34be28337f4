// AttachedStream against a scripted fake engine: the hand-written upgrade request, bytes that
// arrive in the same read as the 101 head, stdin half-close, error answers, and wake-up.
#include "sandbox/docker/attach.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_engine.h"

namespace sandbox::docker {
namespace {

using namespace std::chrono_literals;
using testing::FakeEngine;
using testing::Frame;

std::unique_ptr<Transport> MakeTransport(const CurlGlobal& curl, const std::string& host) {
  TransportOptions o;
  o.host = host;
  auto t = Transport::Create(curl, o);
  EXPECT_TRUE(t.ok());
  return std::move(*t);
}

TEST(AttachUnitTest, UpgradeHeadStdinAndDemuxedOutput) {
  CurlGlobal curl;
  std::string stdin_seen;
  FakeEngine engine([&](int fd, const std::string&) {
    // The head and the first frame in one write: the frame must not be lost with the head.
    FakeEngine::Send(fd,
                     "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                     "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" +
                         Frame(1, "early "));
    stdin_seen = FakeEngine::ReadToEof(fd);  // until CloseStdin()
    std::string rest = Frame(2, "err") + Frame(1, "out:" + stdin_seen);
    // Split a frame across writes.
    FakeEngine::Send(fd, rest.substr(0, 5));
    std::this_thread::sleep_for(20ms);
    FakeEngine::Send(fd, rest.substr(5));
  });
  auto transport = MakeTransport(curl, engine.host());
  AttachOptions options;
  options.attach_stdin = true;
  auto stream = AttachedStream::Open(*transport, "/v1.41/containers/abc/attach?stream=1&stdin=1",
                                     options, DeadlineAfter(5s));
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  ASSERT_TRUE((*stream)->Write("print(1)\n", DeadlineAfter(5s)).ok());
  ASSERT_TRUE((*stream)->CloseStdin().ok());
  ASSERT_TRUE((*stream)->CloseStdin().ok());  // idempotent
  auto out = (*stream)->ReadAll(DeadlineAfter(5s));
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  EXPECT_EQ(out->stdout_data, "early out:print(1)\n");
  EXPECT_EQ(out->stderr_data, "err");
  engine.Join();
  EXPECT_EQ(
      engine.request().rfind("POST /v1.41/containers/abc/attach?stream=1&stdin=1 HTTP/1.1\r\n", 0),
      0u);
  EXPECT_NE(engine.request().find("Upgrade: tcp\r\n"), std::string::npos);
  EXPECT_NE(engine.request().find("Connection: Upgrade\r\n"), std::string::npos);
  EXPECT_EQ(stdin_seen, "print(1)\n");
}

TEST(AttachUnitTest, OutputOnlySendsNoUpgradeAndAccepts200) {
  CurlGlobal curl;
  FakeEngine engine([&](int fd, const std::string&) {
    FakeEngine::Send(fd,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n");
    FakeEngine::Send(fd, Frame(1, "a") + Frame(1, ""));
  });
  auto transport = MakeTransport(curl, engine.host());
  auto stream = AttachedStream::Open(*transport, "/v1.41/containers/abc/attach", AttachOptions{},
                                     DeadlineAfter(5s));
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  auto chunk = (*stream)->Read(DeadlineAfter(5s));
  ASSERT_TRUE(chunk.ok());
  ASSERT_TRUE(chunk->has_value());
  EXPECT_EQ((*chunk)->data, "a");
  auto end = (*stream)->Read(DeadlineAfter(5s));
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_FALSE(end->has_value());
  engine.Join();
  EXPECT_EQ(engine.request().find("Upgrade"), std::string::npos);
  EXPECT_FALSE((*stream)->Write("x", DeadlineAfter(1s)).ok());
}

TEST(AttachUnitTest, ErrorAnswerCarriesDockersMessage) {
  CurlGlobal curl;
  FakeEngine engine([&](int fd, const std::string&) {
    std::string body = R"({"message":"No such container: abc"})";
    FakeEngine::Send(fd,
                     "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                     "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  auto transport = MakeTransport(curl, engine.host());
  auto stream = AttachedStream::Open(*transport, "/v1.41/containers/abc/attach", AttachOptions{},
                                     DeadlineAfter(5s));
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(stream.error().http_status(), 404);
  EXPECT_NE(stream.error().message().find("No such container: abc"), std::string::npos);
}

TEST(AttachUnitTest, TruncatedFrameAtEndIsProtocolError) {
  CurlGlobal curl;
  FakeEngine engine([&](int fd, const std::string&) {
    FakeEngine::Send(fd, "HTTP/1.1 200 OK\r\n\r\n" + Frame(1, "abcdef").substr(0, 10));
  });
  auto transport = MakeTransport(curl, engine.host());
  auto stream = AttachedStream::Open(*transport, "/x", AttachOptions{}, DeadlineAfter(5s));
  ASSERT_TRUE(stream.ok());
  auto out = (*stream)->ReadAll(DeadlineAfter(5s));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kProtocol);
}

TEST(AttachUnitTest, SilentEngineTimesOutThenCloseWakesReader) {
  CurlGlobal curl;
  std::atomic<bool> release{false};
  FakeEngine engine([&](int fd, const std::string&) {
    FakeEngine::Send(fd, "HTTP/1.1 200 OK\r\n\r\n");
    while (!release.load()) std::this_thread::sleep_for(5ms);
  });
  auto transport = MakeTransport(curl, engine.host());
  auto stream = AttachedStream::Open(*transport, "/x", AttachOptions{}, DeadlineAfter(5s));
  ASSERT_TRUE(stream.ok());
  auto idle = (*stream)->Read(DeadlineAfter(100ms));
  ASSERT_FALSE(idle.ok());
  EXPECT_EQ(idle.error().code(), ErrorCode::kTimeout);
  AttachedStream* raw = stream->get();
  std::thread closer([raw] {
    std::this_thread::sleep_for(100ms);
    raw->Close();
  });
  auto start = Clock::now();
  auto r = raw->Read(DeadlineAfter(30s));
  closer.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCancelled);
  EXPECT_LT(Clock::now() - start, 5s);
  release.store(true);
}

TEST(AttachUnitTest, EngineThatNeverAnswersHitsTheOpenDeadline) {
  CurlGlobal curl;
  std::atomic<bool> release{false};
  FakeEngine engine([&](int, const std::string&) {
    while (!release.load()) std::this_thread::sleep_for(5ms);
  });
  auto transport = MakeTransport(curl, engine.host());
  auto stream = AttachedStream::Open(*transport, "/x", AttachOptions{}, DeadlineAfter(200ms));
  release.store(true);
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code(), ErrorCode::kTimeout);
}

}  // namespace
}  // namespace sandbox::docker
