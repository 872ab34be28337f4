#include "sandbox/transport/session_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sandbox::transport {
namespace {

using std::chrono::seconds;
using Table = SessionTable<TransportSession>;

// A table on a clock the test moves by hand.
class SessionTableTest : public ::testing::Test {
 protected:
  SessionTableOptions Options(std::size_t max_sessions, std::size_t per_principal,
                              seconds idle_ttl = seconds(0)) {
    SessionTableOptions options;
    options.max_sessions = max_sessions;
    options.max_sessions_per_principal = per_principal;
    options.idle_ttl = idle_ttl;
    options.now = [this] { return now_; };
    return options;
  }
  // Opens a session that the test expects to be granted.
  static std::shared_ptr<TransportSession> OpenOk(Table& table, const std::string& principal) {
    auto opened = table.Open(principal);
    EXPECT_EQ(opened.refusal, SessionRefusal::kNone);
    EXPECT_NE(opened.session, nullptr);
    return opened.session;
  }

  std::chrono::steady_clock::time_point now_{};
};

TEST_F(SessionTableTest, IdsAreUnguessableAndUselessWithAnotherPrincipal) {
  Table table(Options(10, 0));
  auto alice = OpenOk(table, "alice");
  auto again = OpenOk(table, "alice");
  EXPECT_EQ(alice->id.size(), 64u);  // 256 bits, hex
  EXPECT_EQ(alice->id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(alice->id, again->id);
  EXPECT_EQ(alice->mcp.principal(), "alice");

  EXPECT_EQ(table.Find(alice->id, "alice"), alice);
  // Another principal's session is answered exactly as an unknown id.
  EXPECT_EQ(table.Find(alice->id, "bob"), nullptr);
  EXPECT_EQ(table.Find("no-such-id", "alice"), nullptr);
  EXPECT_EQ(table.size(), 2u);
}

// Behind a balancer (server.replica), each id names its replica before the random part; an id
// of another replica is unknown here.
TEST_F(SessionTableTest, AReplicasIdsStartWithItsName) {
  SessionTableOptions options = Options(10, 0);
  options.replica = "r1";
  Table table(options);
  auto alice = OpenOk(table, "alice");
  ASSERT_EQ(alice->id.rfind("r1-", 0), 0u) << alice->id;
  EXPECT_EQ(alice->id.size(), 3u + 64u);
  EXPECT_EQ(alice->id.find_first_not_of("0123456789abcdef", 3), std::string::npos);
  EXPECT_EQ(table.Find(alice->id, "alice"), alice);
  EXPECT_EQ(table.Find("r2-" + alice->id.substr(3), "alice"), nullptr);
  EXPECT_EQ(table.Find(alice->id.substr(3), "alice"), nullptr);
}

TEST_F(SessionTableTest, AtItsShareAPrincipalLosesItsLeastRecentlyUsedIdleSession) {
  Table table(Options(10, 2));
  auto bob = OpenOk(table, "bob");
  auto first = OpenOk(table, "alice");
  now_ += seconds(1);
  auto second = OpenOk(table, "alice");
  now_ += seconds(1);
  ASSERT_NE(table.Find(first->id, "alice"), nullptr);  // now `second` is the least recently used

  auto third = table.Open("alice");
  ASSERT_NE(third.session, nullptr);
  EXPECT_TRUE(third.evicted);
  EXPECT_EQ(third.principal_sessions, 2u);
  EXPECT_EQ(table.Find(second->id, "alice"), nullptr);
  EXPECT_NE(table.Find(first->id, "alice"), nullptr);
  EXPECT_NE(table.Find(bob->id, "bob"), nullptr);  // another principal's are untouched
  EXPECT_FALSE(second->mcp.ended());               // ending it is the transport's
  EXPECT_EQ(table.size(), 3u);
}

TEST_F(SessionTableTest, SessionsWithACallInFlightAreNeverEvicted) {
  Table table(Options(10, 2));
  auto first = OpenOk(table, "alice");
  auto second = OpenOk(table, "alice");
  ASSERT_NE(first->mcp.BeginRequest(1), nullptr);
  ASSERT_NE(second->mcp.BeginRequest(1), nullptr);

  auto refused = table.Open("alice");
  EXPECT_EQ(refused.session, nullptr);
  EXPECT_EQ(refused.refusal, SessionRefusal::kPrincipalBusy);
  EXPECT_EQ(refused.principal_sessions, 2u);
  EXPECT_FALSE(refused.evicted);
  EXPECT_EQ(table.size(), 2u);
  OpenOk(table, "bob");  // the share is per principal

  first->mcp.EndRequest(1);  // idle again: it is the one to go
  auto opened = table.Open("alice");
  EXPECT_TRUE(opened.evicted);
  EXPECT_EQ(table.Find(first->id, "alice"), nullptr);
  EXPECT_NE(table.Find(second->id, "alice"), nullptr);
}

TEST_F(SessionTableTest, BeyondTheTotalBoundEveryoneIsRefused) {
  Table table(Options(2, 0));
  OpenOk(table, "alice");
  OpenOk(table, "alice");
  for (const char* principal : {"alice", "bob"}) {
    auto refused = table.Open(principal);
    EXPECT_EQ(refused.session, nullptr);
    EXPECT_EQ(refused.refusal, SessionRefusal::kFull);
  }
  EXPECT_EQ(table.size(), 2u);
}

TEST_F(SessionTableTest, IdleSessionsExpireAtTheNextOpen) {
  Table table(Options(10, 0, seconds(60)));
  auto idle = OpenOk(table, "alice");
  auto busy = OpenOk(table, "alice");
  auto used = OpenOk(table, "bob");
  ASSERT_NE(busy->mcp.BeginRequest("r"), nullptr);
  now_ += seconds(30);
  ASSERT_NE(table.Find(used->id, "bob"), nullptr);
  now_ += seconds(30);  // exactly the ttl: not yet
  OpenOk(table, "carol");
  EXPECT_EQ(table.size(), 4u);

  now_ += seconds(1);
  OpenOk(table, "carol");
  EXPECT_EQ(table.Find(idle->id, "alice"), nullptr);
  EXPECT_NE(table.Find(busy->id, "alice"), nullptr);  // a call in flight keeps it
  EXPECT_NE(table.Find(used->id, "bob"), nullptr);    // used 31 s ago
  EXPECT_EQ(table.size(), 4u);
}

TEST_F(SessionTableTest, WithoutATtlSessionsNeverExpire) {
  Table table(Options(10, 0));
  auto session = OpenOk(table, "alice");
  now_ += std::chrono::hours(24 * 365);
  OpenOk(table, "alice");
  EXPECT_EQ(table.Find(session->id, "alice"), session);
}

TEST_F(SessionTableTest, RemoveAndTakeAllHandSessionsOutUnended) {
  Table table(Options(10, 0));
  auto one = OpenOk(table, "alice");
  auto two = OpenOk(table, "bob");
  auto three = OpenOk(table, "bob");

  EXPECT_EQ(table.Remove(one->id), one);
  EXPECT_EQ(table.Remove(one->id), nullptr);
  EXPECT_FALSE(one->mcp.ended());
  EXPECT_EQ(table.Find(one->id, "alice"), nullptr);

  auto all = table.TakeAll();
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(table.TakeAll().empty());
}

// A transport's own session type: built with its extra arguments, found as that type.
struct StreamSession : TransportSession {
  StreamSession(std::string session_id, std::string principal, std::string stream_name)
      : TransportSession(std::move(session_id), std::move(principal)),
        stream(std::move(stream_name)) {}
  const std::string stream;
};

TEST_F(SessionTableTest, ATransportKeepsItsOwnFieldsInItsSessions) {
  SessionTable<StreamSession> table(Options(10, 0));
  auto opened = table.Open("alice", "stream-1");
  ASSERT_NE(opened.session, nullptr);
  std::shared_ptr<StreamSession> found = table.Find(opened.session->id, "alice");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->stream, "stream-1");
}

TEST(SessionTableDefaultsTest, TheRealClockAndTheDocumentedBounds) {
  SessionTableOptions options;
  EXPECT_EQ(options.max_sessions, 10000u);
  EXPECT_EQ(options.max_sessions_per_principal, 1000u);
  EXPECT_EQ(options.idle_ttl, seconds(3600));
  Table table(options);  // no clock given: steady_clock
  auto opened = table.Open("alice");
  ASSERT_NE(opened.session, nullptr);
  EXPECT_EQ(table.Find(opened.session->id, "alice"), opened.session);
}

// Handlers on many HTTP workers open, find and remove at once; the bound holds throughout.
TEST_F(SessionTableTest, ConcurrentOpensNeverExceedTheBound) {
  Table table(Options(50, 0));
  std::vector<std::thread> threads;
  threads.reserve(8);
  std::atomic<int> granted{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const std::string principal = "p" + std::to_string(t);
      for (int i = 0; i < 20; ++i) {
        auto opened = table.Open(principal);
        if (opened.session == nullptr) continue;
        ++granted;
        EXPECT_EQ(table.Find(opened.session->id, principal), opened.session);
        if (i % 2 == 0) table.Remove(opened.session->id);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(table.size(), 50u);
  EXPECT_GE(granted.load(), 50);
}

}  // namespace
}  // namespace sandbox::transport
