#include "sandbox/transport/http_transport_core.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "unit/mcp/test_util.h"

namespace sandbox::transport {
namespace {

// A transport's session that counts how often it was ended, as a stream would be closed.
struct CountedSession : TransportSession {
  CountedSession(std::string session_id, std::string principal,
                 std::shared_ptr<std::atomic<int>> counter)
      : TransportSession(std::move(session_id), std::move(principal)), ends(std::move(counter)) {}
  void End() override {
    mcp.End();
    ++*ends;
  }
  const std::shared_ptr<std::atomic<int>> ends;
};

class HttpTransportCoreTest : public ::testing::Test {
 protected:
  HttpTransportCoreTest() : core_(dispatcher_, Options(), SessionTableOptions{}, nullptr) {}
  static HttpTransportOptions Options() {
    HttpTransportOptions options;
    options.max_concurrent_calls = 2;
    return options;
  }
  std::shared_ptr<CountedSession> Open(const std::string& principal) {
    auto opened = core_.sessions().Open(principal, ends_);
    EXPECT_NE(opened.session, nullptr);
    return opened.session;
  }

  mcp::Dispatcher dispatcher_{mcp::ServerIdentity{}, mcp::ToolRegistry{},
                              mcp::testing::NullLogger()};
  std::shared_ptr<std::atomic<int>> ends_ = std::make_shared<std::atomic<int>>(0);
  HttpTransportCore<CountedSession> core_;
};

TEST_F(HttpTransportCoreTest, EndSessionEndsItOnceAndForgetsIt) {
  auto session = Open("alice");
  auto other = Open("alice");
  core_.EndSession(session->id);
  EXPECT_EQ(ends_->load(), 1);
  EXPECT_TRUE(session->mcp.ended());
  EXPECT_EQ(core_.sessions().Find(session->id, "alice"), nullptr);
  core_.EndSession(session->id);  // already gone: nothing more
  core_.EndSession("no-such-id");
  EXPECT_EQ(ends_->load(), 1);
  EXPECT_FALSE(other->mcp.ended());
  EXPECT_EQ(core_.sessions().size(), 1u);
}

TEST_F(HttpTransportCoreTest, StopEndsEverySessionAndWaitsForTheCalls) {
  auto alice = Open("alice");
  auto bob = Open("bob");
  // A call that runs until its session ends, as a run does until it is cancelled.
  std::atomic<bool> finished{false};
  ASSERT_TRUE(core_.tasks().Spawn([alice, &finished] {
    while (!alice->mcp.ended()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    finished = true;
  }));
  EXPECT_FALSE(core_.stopping());

  core_.Stop();
  EXPECT_TRUE(core_.stopping());
  EXPECT_TRUE(finished.load());  // Stop returned only after the call
  EXPECT_TRUE(alice->mcp.ended());
  EXPECT_TRUE(bob->mcp.ended());
  EXPECT_EQ(ends_->load(), 2);
  EXPECT_EQ(core_.sessions().size(), 0u);

  core_.Stop();  // idempotent: nothing is ended twice
  EXPECT_EQ(ends_->load(), 2);
}

TEST_F(HttpTransportCoreTest, CallsAreBoundedByMaxConcurrentCalls) {
  std::atomic<bool> release{false};
  auto wait = [&release] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  ASSERT_TRUE(core_.tasks().Spawn(wait));
  ASSERT_TRUE(core_.tasks().Spawn(wait));
  EXPECT_FALSE(core_.tasks().Spawn(wait));  // max_concurrent_calls = 2
  release = true;
  core_.tasks().Wait();
  EXPECT_EQ(core_.options().max_concurrent_calls, 2u);
}

}  // namespace
}  // namespace sandbox::transport
