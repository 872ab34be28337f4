// Event parsing, and EventStream against a scripted fake engine (chunked, split lines, end).
#include "sandbox/docker/events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_engine.h"

namespace sandbox::docker {
namespace {

using namespace std::chrono_literals;
using testing::FakeEngine;

constexpr char kDie[] =
    R"({"status":"die","id":"abc","from":"img","Type":"container","Action":"die",)"
    R"("Actor":{"ID":"abc","Attributes":{"exitCode":"137","io.sandbox-mcp.managed":"true",)"
    R"("name":"sbx"}},"scope":"local","time":1700000000,"timeNano":1700000000123456789})";

TEST(EventParseTest, DieEvent) {
  auto e = ParseEvent(kDie);
  ASSERT_TRUE(e.ok()) << e.error().ToString();
  EXPECT_EQ(e->type, "container");
  EXPECT_EQ(e->action, "die");
  EXPECT_EQ(e->actor_id, "abc");
  EXPECT_EQ(e->attributes.at("io.sandbox-mcp.managed"), "true");
  ASSERT_TRUE(e->exit_code().has_value());
  EXPECT_EQ(*e->exit_code(), 137);
  EXPECT_EQ(e->time, 1700000000);
  EXPECT_EQ(e->time_nano, 1700000000123456789);
}

TEST(EventParseTest, OomHasNoExitCodeAndGarbageIsRejected) {
  auto e = ParseEvent(R"({"Type":"container","Action":"oom","Actor":{"ID":"x","Attributes":{}}})");
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->exit_code().has_value());
  EXPECT_FALSE(ParseEvent("not json").ok());
  EXPECT_FALSE(ParseEvent("[]").ok());
  EXPECT_FALSE(ParseEvent("{}").ok());
}

// Found by fuzz_docker_answers: a member of another type than documented ("Action": 7) threw a
// JSON type error out of ParseEvent, which runs on the event watcher's thread (the process
// terminated).
TEST(EventParseTest, MembersOfOtherTypesCountAsAbsent) {
  auto e = ParseEvent(
      R"({"Type":1,"Action":7,"status":"die","Actor":{"ID":[],"Attributes":{"exitCode":"1"}},)"
      R"("id":"abc","time":"soon","timeNano":1.5e300})");
  ASSERT_TRUE(e.ok()) << e.error().ToString();
  EXPECT_EQ(e->type, "");
  EXPECT_EQ(e->action, "die");
  EXPECT_EQ(e->actor_id, "abc");
  EXPECT_EQ(e->time, 0);
  EXPECT_EQ(e->time_nano, 0);
  EXPECT_EQ(*e->exit_code(), 1);
  auto none = ParseEvent(R"({"Action":700000001})");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kProtocol);
}

std::string Chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

TEST(EventStreamUnitTest, ChunkedLinesSplitAnywhereThenEnd) {
  CurlGlobal curl;
  FakeEngine engine([&](int fd, const std::string&) {
    FakeEngine::Send(fd,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n");
    std::string lines = std::string(kDie) + "\n" +
                        R"({"Type":"container","Action":"destroy","Actor":{"ID":"abc"}})" + "\n";
    FakeEngine::Send(fd, Chunk(lines.substr(0, 17)));
    std::this_thread::sleep_for(20ms);
    FakeEngine::Send(fd, Chunk(lines.substr(17)));
    FakeEngine::Send(fd, "0\r\n\r\n");
  });
  TransportOptions o;
  o.host = engine.host();
  auto transport = Transport::Create(curl, o);
  ASSERT_TRUE(transport.ok());
  auto stream = EventStream::Open(**transport, "/v1.41/events", DeadlineAfter(5s));
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  auto first = (*stream)->Next(DeadlineAfter(5s));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->action, "die");
  auto second = (*stream)->Next(DeadlineAfter(5s));
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ((*second)->action, "destroy");
  auto end = (*stream)->Next(DeadlineAfter(5s));
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_FALSE(end->has_value());
  engine.Join();
  EXPECT_EQ(engine.request().rfind("GET /v1.41/events HTTP/1.1\r\n", 0), 0u);
}

TEST(EventStreamUnitTest, ErrorStatusBecomesError) {
  CurlGlobal curl;
  FakeEngine engine([&](int fd, const std::string&) {
    std::string body = R"({"message":"invalid filter 'bogus'"})";
    FakeEngine::Send(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  TransportOptions o;
  o.host = engine.host();
  auto transport = Transport::Create(curl, o);
  ASSERT_TRUE(transport.ok());
  auto stream = EventStream::Open(**transport, "/v1.41/events", DeadlineAfter(5s));
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code(), ErrorCode::kEngine);
  EXPECT_EQ(stream.error().http_status(), 400);
  EXPECT_NE(stream.error().message().find("invalid filter"), std::string::npos);
}

TEST(EventStreamUnitTest, StopWakesNextPromptly) {
  CurlGlobal curl;
  std::atomic<bool> release{false};
  FakeEngine engine([&](int fd, const std::string&) {
    FakeEngine::Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    while (!release.load()) std::this_thread::sleep_for(5ms);
  });
  TransportOptions o;
  o.host = engine.host();
  auto transport = Transport::Create(curl, o);
  ASSERT_TRUE(transport.ok());
  auto stream = EventStream::Open(**transport, "/v1.41/events", DeadlineAfter(5s));
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  EventStream* raw = stream->get();
  std::thread stopper([raw] {
    std::this_thread::sleep_for(100ms);
    raw->Stop();
  });
  auto start = Clock::now();
  auto next = raw->Next(DeadlineAfter(30s));
  stopper.join();
  release.store(true);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code(), ErrorCode::kCancelled);
  EXPECT_LT(Clock::now() - start, 900ms);  // woken, not the 1 s poll slice
}

}  // namespace
}  // namespace sandbox::docker
