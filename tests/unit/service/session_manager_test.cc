// SessionManager over fake sandboxes (tests/support/fake_sandbox.h, fake_maker.h), in the pools
// BuildPools makes: quotas, expiry, restarts, request resolution and the session's file
// operations, without Docker.
#include "sandbox/service/session_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/session_record.h"
#include "support/fake_maker.h"

namespace sandbox::service {
namespace {

using namespace std::chrono_literals;
using testing::FakeSandbox;
using testing::FakeWorld;

class NullObserver final : public exec::RunObserver {};

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

config::Config TestConfig() {
  config::Config c;
  c.pools[0].name = "default";
  c.pools[0].max_limits.timeout_s = 60;
  config::PoolConfig big = c.pools[0];
  big.name = "big";
  c.pools.push_back(big);
  c.sessions.max_total = 3;
  c.sessions.max_per_principal = 2;
  c.sessions.warm = 0;
  c.sessions.busy_wait = 200ms;
  c.sessions.restart_grace = 0s;
  c.sessions.max_file_bytes = 100;
  return c;
}

class SessionManagerTest : public ::testing::Test {
 protected:
  void Start(config::Config config = TestConfig()) {
    config_ = std::move(config);
    resolver_ = std::make_unique<RequestResolver>(config_, runner::InputLimits{});
    manager_ = SessionManager::Create(config_, *resolver_, testing::FakeMakers(world_),
                                      ServiceOptions{}, nullptr);
    manager_->Start();
  }

  void TearDown() override {
    if (manager_) manager_->Shutdown();
    manager_.reset();
    EXPECT_EQ(world_.live(), 0) << "a sandbox outlived the manager";
  }

  exec::SessionInfo Create(const std::string& principal = "alice",
                           exec::SessionCreateRequest request = {}) {
    auto created = manager_->Create(principal, request);
    EXPECT_TRUE(created.ok()) << created.error().ToString();
    return created.ok() ? *created : exec::SessionInfo{};
  }

  Result<exec::RunResult> Run(const std::string& id, const std::string& code,
                              exec::LimitOverrides limits = {},
                              const std::string& principal = "alice") {
    exec::RunRequest request;
    request.code = code;
    request.limits = limits;
    NullObserver observer;
    exec::CancelToken cancel;
    return manager_->Run(principal, id, request, observer, cancel);
  }

  FakeWorld world_;
  config::Config config_;
  std::unique_ptr<RequestResolver> resolver_;
  std::unique_ptr<SessionManager> manager_;
};

// ---- quotas ----

TEST_F(SessionManagerTest, PerPrincipalQuotaIsKLimitAndFreedByClose) {
  Start();
  auto a = Create();
  Create();
  auto third = manager_->Create("alice", {});
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), ErrorCode::kLimit);
  EXPECT_NE(third.error().message().find("your limit of 2 sessions"), std::string::npos)
      << third.error().message();
  ASSERT_TRUE(manager_->Close("alice", a.id).ok());
  EXPECT_TRUE(manager_->Create("alice", {}).ok());
}

TEST_F(SessionManagerTest, ServerQuotaIsKLimitWhateverThePrincipal) {
  Start();
  Create("alice");
  Create("alice");
  Create("bob");
  auto fourth = manager_->Create("carol", {});
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().code(), ErrorCode::kLimit);
  EXPECT_NE(fourth.error().message().find("server's limit of 3 sessions"), std::string::npos);
  EXPECT_EQ(manager_->stats().active, 3);
  EXPECT_EQ(manager_->stats().created_total, 3u);
}

TEST_F(SessionManagerTest, ASessionOfAnotherPrincipalIsNotFound) {
  Start();
  auto s = Create("alice");
  auto got = manager_->Get("bob", s.id);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(Run(s.id, "1", {}, "bob").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(manager_->Close("bob", s.id).error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(manager_->Get("alice", s.id).ok());
}

// ---- expiry ----

TEST_F(SessionManagerTest, IdleSessionsExpireAndTheirSandboxesGo) {
  auto config = TestConfig();
  config.sessions.idle_timeout = 1s;
  Start(config);
  auto s = Create();
  EXPECT_EQ(world_.live(), 1);
  EXPECT_TRUE(WaitFor([&] { return !manager_->Get("alice", s.id).ok(); }));
  EXPECT_EQ(manager_->Get("alice", s.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(manager_->stats().expired_total, 1u);
  EXPECT_TRUE(WaitFor([&] { return world_.live() == 0; }));
}

TEST_F(SessionManagerTest, SessionsEndAtTheirLifetimeEvenWhenUsed) {
  auto config = TestConfig();
  config.sessions.max_lifetime = 1s;
  Start(config);
  auto s = Create();
  EXPECT_TRUE(WaitFor([&] {
    (void)Run(s.id, "keep me");  // use does not extend the lifetime
    return !manager_->Get("alice", s.id).ok();
  }));
  EXPECT_EQ(manager_->stats().expired_total, 1u);
}

TEST_F(SessionManagerTest, ListingDoesNotKeepASessionAlive) {
  auto config = TestConfig();
  config.sessions.idle_timeout = 1s;
  Start(config);
  auto s = Create();
  EXPECT_TRUE(WaitFor([&] {
    auto list = manager_->List("alice");
    return list.ok() && list->empty();
  }));
}

// ---- restarts ----

TEST_F(SessionManagerTest, ALostContainerRestartsTheSessionEmptyUnderTheSameId) {
  Start();
  auto s = Create();
  auto crashed = Run(s.id, "crash");
  ASSERT_TRUE(crashed.ok());
  EXPECT_TRUE(crashed->session_reset);
  EXPECT_NE(crashed->detail.find("restarted empty"), std::string::npos) << crashed->detail;
  EXPECT_EQ(crashed->session_id, s.id);
  auto next = Run(s.id, "print(1)");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->verdict, exec::Verdict::kOk);
  EXPECT_FALSE(next->session_reset);
  auto info = manager_->Get("alice", s.id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->restarts, 1);
  EXPECT_EQ(info->runs, 2);
  EXPECT_EQ(manager_->stats().restarts_total, 1u);
  EXPECT_EQ(world_.started(), 2);
  // The lost one is destroyed on the pool's reaper thread, so it goes shortly after.
  EXPECT_TRUE(WaitFor([&] { return world_.live() == 1; })) << world_.live();
}

TEST_F(SessionManagerTest, ALimitKillRestartsTheInterpreterInTheSameContainer) {
  Start();
  auto s = Create();
  auto killed = Run(s.id, "limit kill");
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(killed->verdict, exec::Verdict::kMemory);
  EXPECT_TRUE(killed->session_reset);
  EXPECT_EQ(manager_->Get("alice", s.id)->restarts, 1);
  EXPECT_EQ(world_.started(), 1);
}

TEST_F(SessionManagerTest, AContainerLostWhileIdleIsReportedWithTheNextRun) {
  Start();
  auto s = Create();
  ASSERT_TRUE(world_.WithSession(s.id, [](FakeSandbox& sandbox) { sandbox.Break(); }));
  auto files = manager_->ListFiles("alice", s.id);  // served by a fresh sandbox
  ASSERT_TRUE(files.ok()) << files.error().ToString();
  auto run = Run(s.id, "print(1)");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->verdict, exec::Verdict::kOk);
  EXPECT_NE(run->session_notice.find("restarted empty"), std::string::npos) << run->session_notice;
  EXPECT_EQ(manager_->Get("alice", s.id)->restarts, 1);
}

TEST_F(SessionManagerTest, AnInterpreterRestartWhileIdleBecomesTheNextRunsNotice) {
  Start();
  auto s = Create();
  ASSERT_TRUE(world_.WithSession(
      s.id, [](FakeSandbox& sandbox) { sandbox.RestartWhileIdle("the interpreter died"); }));
  auto run = Run(s.id, "print(1)");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->session_notice, "the interpreter died");
}

TEST_F(SessionManagerTest, AFileOperationThatLosesTheSandboxSaysTheSessionRestarted) {
  Start();
  auto s = Create();
  ASSERT_TRUE(manager_->PutFiles("alice", s.id, {{"a.txt", "x"}}).ok());
  ASSERT_TRUE(world_.WithSession(s.id, [](FakeSandbox& sandbox) { sandbox.BreakOnNextFileOp(); }));
  auto got = manager_->GetFile("alice", s.id, "a.txt");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(got.error().message().find("restarted empty"), std::string::npos);
  // The next call has a fresh, empty sandbox.
  auto again = manager_->GetFile("alice", s.id, "a.txt");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(manager_->Get("alice", s.id)->restarts, 1);
}

// ---- request resolution ----

TEST_F(SessionManagerTest, CreateResolvesThePoolAndLimits) {
  Start();
  exec::SessionCreateRequest request;
  request.pool = "big";
  request.limits.memory_bytes = 64LL << 20;
  request.limits.timeout_s = 5;
  auto s = Create("alice", request);
  EXPECT_EQ(s.pool, "big");
  EXPECT_EQ(s.memory_limit_bytes, 64LL << 20);
  EXPECT_EQ(s.timeout_s, 5);
  bool checked = world_.WithSession(s.id, [](FakeSandbox& sandbox) {
    EXPECT_EQ(sandbox.session_limits().memory_bytes, 64LL << 20);
    EXPECT_EQ(sandbox.session_limits().timeout_s, 5);
  });
  EXPECT_TRUE(checked);
}

TEST_F(SessionManagerTest, CreateRefusesWhatThePoolDoesNotAllow) {
  Start();
  exec::SessionCreateRequest unknown;
  unknown.pool = "nope";
  EXPECT_EQ(manager_->Create("alice", unknown).error().code(), ErrorCode::kInvalidArgument);
  exec::SessionCreateRequest slow;
  slow.limits.timeout_s = 61;
  auto refused = manager_->Create("alice", slow);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message().rfind("timeout_s:", 0), 0u) << refused.error().message();
  EXPECT_EQ(world_.started(), 0);  // refused before any sandbox was had
}

TEST_F(SessionManagerTest, RunNarrowsTimeoutAndOutputButNeverMemory) {
  Start();
  auto s = Create();
  exec::LimitOverrides narrow;
  narrow.timeout_s = 2;
  narrow.output_bytes = 4096;
  ASSERT_TRUE(Run(s.id, "1", narrow).ok());
  world_.WithSession(s.id, [](FakeSandbox& sandbox) {
    EXPECT_EQ(sandbox.last_limits().timeout_s, 2);
    EXPECT_EQ(sandbox.last_limits().output_bytes, 4096);
  });
  exec::LimitOverrides memory;
  memory.memory_bytes = 32LL << 20;
  auto refused = Run(s.id, "1", memory);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message().rfind("memory_bytes:", 0), 0u);

  exec::RunRequest other_pool;
  other_pool.code = "1";
  other_pool.pool = "big";
  NullObserver observer;
  exec::CancelToken cancel;
  auto wrong = manager_->Run("alice", s.id, other_pool, observer, cancel);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message().rfind("pool:", 0), 0u);
}

TEST_F(SessionManagerTest, FilePathsAndSizesAreCheckedBeforeTheSandbox) {
  Start();
  auto s = Create();
  auto dotdot = manager_->GetFile("alice", s.id, "../etc/passwd");
  ASSERT_FALSE(dotdot.ok());
  EXPECT_EQ(dotdot.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dotdot.error().message().rfind("path:", 0), 0u) << dotdot.error().message();
  EXPECT_EQ(manager_->DeleteFile("alice", s.id, "/abs").error().code(),
            ErrorCode::kInvalidArgument);
  auto twice = manager_->PutFiles("alice", s.id, {{"a", "1"}, {"./a", "2"}});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("given twice"), std::string::npos);
  auto big = manager_->PutFiles("alice", s.id, {{"a", std::string(101, 'x')}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), ErrorCode::kLimit);
  world_.WithSession(s.id, [](FakeSandbox& sandbox) { EXPECT_TRUE(sandbox.files().empty()); });
}

TEST_F(SessionManagerTest, FilesRoundTripThroughTheSandbox) {
  Start();
  auto s = Create();
  auto put = manager_->PutFiles("alice", s.id, {{"data/a.txt", "hello"}});
  ASSERT_TRUE(put.ok());
  ASSERT_EQ(put->size(), 1u);
  EXPECT_EQ((*put)[0].size, 5);
  auto list = manager_->ListFiles("alice", s.id);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->files.size(), 1u);
  EXPECT_EQ(list->files[0].path, "data/a.txt");
  auto got = manager_->GetFile("alice", s.id, "data/a.txt");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data, "hello");
  ASSERT_TRUE(manager_->DeleteFile("alice", s.id, "data/a.txt").ok());
  EXPECT_EQ(manager_->GetFile("alice", s.id, "data/a.txt").error().code(), ErrorCode::kNotFound);
}

TEST_F(SessionManagerTest, ABusySessionIsKBusyForOtherCalls) {
  Start();
  auto s = Create();
  exec::CancelToken cancel;
  std::thread runner([&] {
    exec::RunRequest request;
    request.code = "sleep";
    NullObserver observer;
    (void)manager_->Run("alice", s.id, request, observer, cancel);
  });
  ASSERT_TRUE(WaitFor([&] { return manager_->Get("alice", s.id)->busy; }));
  auto busy = manager_->ListFiles("alice", s.id);
  cancel.Cancel();
  runner.join();
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code(), ErrorCode::kBusy);
}

TEST_F(SessionManagerTest, CloseDestroysTheSandboxEvenDuringACall) {
  Start();
  auto s = Create();
  std::thread runner([&] {
    exec::RunRequest request;
    request.code = "sleep";
    NullObserver observer;
    exec::CancelToken cancel;
    auto result = manager_->Run("alice", s.id, request, observer, cancel);
    EXPECT_TRUE(result.ok());
    if (result.ok()) {
      EXPECT_EQ(result->verdict, exec::Verdict::kCancelled);
    }
  });
  ASSERT_TRUE(WaitFor([&] { return manager_->Get("alice", s.id)->busy; }));
  ASSERT_TRUE(manager_->Close("alice", s.id).ok());
  runner.join();
  EXPECT_TRUE(WaitFor([&] { return world_.live() == 0; }));
}

// ---- restart grace: records, keyed containers, adoption ----

TEST_F(SessionManagerTest, WithARestartGraceASessionKeepsItsRecordAndKeyedContainer) {
  auto config = TestConfig();
  config.sessions.restart_grace = 60s;
  Start(config);
  auto s = Create();
  bool checked = world_.WithSession(s.id, [&](FakeSandbox& sandbox) {
    EXPECT_TRUE(RecordMatchesId(sandbox.terms().record, s.id));
    ASSERT_TRUE(sandbox.terms().watchdog.has_value());
    EXPECT_EQ(*sandbox.terms().watchdog, 60s);
  });
  EXPECT_TRUE(checked);
  // A replacement is started for the session's own id (its key is in the label).
  ASSERT_TRUE(Run(s.id, "crash").ok());
  ASSERT_TRUE(Run(s.id, "1").ok());
  EXPECT_TRUE(world_.WithSession(s.id, [](FakeSandbox&) {}));
}

TEST_F(SessionManagerTest, ShutdownLeavingSessionsLetsTheirSandboxesRunOn) {
  auto config = TestConfig();
  config.sessions.restart_grace = 60s;
  Start(config);
  Create();
  Create("bob");
  manager_->Shutdown(/*leave_sessions=*/true);
  EXPECT_EQ(world_.left(), 2);
  EXPECT_EQ(manager_->stats().active, 0);
}

TEST_F(SessionManagerTest, AReplicasSessionIdsStartWithItsName) {
  config::Config config = TestConfig();
  config.server.replica = "r7";
  Start(config);
  const auto info = Create();
  ASSERT_EQ(info.id.rfind("r7-", 0), 0u) << info.id;
  EXPECT_EQ(info.id.size(), 3u + 32u);  // the prefix, then 128 random bits in hex
  EXPECT_TRUE(Run(info.id, "print(1)").ok());
}

TEST_F(SessionManagerTest, WithoutARestartGraceShutdownEndsEverySession) {
  Start();
  Create();
  manager_->Shutdown(/*leave_sessions=*/true);
  EXPECT_EQ(world_.left(), 0);
}

class AdoptTest : public SessionManagerTest {
 protected:
  void SetUp() override {
    config_ = TestConfig();
    config_.sessions.restart_grace = 60s;
    config_.instance_id = "adopt-test";
    config_.server.replica = Replica();
    resolver_ = std::make_unique<RequestResolver>(config_, runner::InputLimits{});
    manager_ = SessionManager::Create(config_, *resolver_, testing::FakeMakers(world_),
                                      ServiceOptions{}, nullptr);
  }

  // server.replica of the server under test.
  virtual std::string Replica() const { return ""; }

  // A session container of this instance holding the session `id` of alice.
  engine::Listed Left(const std::string& id, const std::string& pool = "default") {
    engine::Listed c;
    c.id = "left" + id;
    c.labels = {{std::string(runner::kManagedLabel), "true"},
                {std::string(runner::kInstanceLabel), config_.instance_id},
                {std::string(runner::kModeLabel), "session"},
                {std::string(runner::kPoolLabel), pool},
                {std::string(kSessionKeyLabel), SessionKey(id)}};
    return c;
  }

  void LeaveRecordOf(const std::string& id) {
    SessionRecord record;
    record.key = SessionKey(id);
    record.principal = "alice";
    record.pool = "default";
    record.created_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count() -
                             1000;
    record.limits = config_.pools[0].limits;
    runner::ResumeInfo resume;
    resume.record = EncodeRecord(record, id);
    resume.idle_s = 2;
    resume.protocol = runner::kHarnessProtocol;
    world_.set_resume(resume);
  }
};

TEST_F(AdoptTest, AValidLeftSessionIsServedOnceItsOwnerPresentsTheId) {
  const std::string id = NewSessionId("");
  LeaveRecordOf(id);
  EXPECT_EQ(manager_->Adopt({Left(id)}), 1);
  manager_->Start();
  EXPECT_EQ(manager_->stats().restored_total, 1u);
  // Unknown by id until presented: not listed, but found by its id.
  EXPECT_TRUE(manager_->List("alice")->empty());
  EXPECT_EQ(manager_->Get("bob", id).error().code(), ErrorCode::kNotFound);
  auto run = Run(id, "print(1)");
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->verdict, exec::Verdict::kOk);
  EXPECT_EQ(manager_->List("alice")->size(), 1u);
}

TEST_F(AdoptTest, ARecordOfAnotherIdIsNotAdopted) {
  const std::string id = NewSessionId("");
  LeaveRecordOf(NewSessionId(""));  // the record's key does not match the label
  EXPECT_EQ(manager_->Adopt({Left(id)}), 0);
  EXPECT_EQ(world_.live(), 0);  // removed
}

// A replica behind a balancer (server.replica "r1"), restarted: its ids carry its prefix, which
// the key, the label and the record's MAC all cover, so it adopts its sessions as before; the
// same random part under another replica's prefix is another id, unknown here.
class ReplicaAdoptTest : public AdoptTest {
 protected:
  std::string Replica() const override { return "r1"; }
};

TEST_F(ReplicaAdoptTest, ARestartedReplicaAdoptsItsSessionsAndAnotherReplicasIdIsUnknown) {
  const std::string id = NewSessionId("r1");
  ASSERT_EQ(id.rfind("r1-", 0), 0u) << id;
  LeaveRecordOf(id);
  EXPECT_EQ(manager_->Adopt({Left(id)}), 1);
  manager_->Start();
  const std::string foreign = "r2-" + id.substr(3);
  auto refused = Run(foreign, "print(1)");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kNotFound);
  auto run = Run(id, "print(1)");
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->verdict, exec::Verdict::kOk);
  // A new session of this replica: made for an id with its prefix (the warm container's label).
  auto created = Create();
  EXPECT_EQ(created.id.rfind("r1-", 0), 0u) << created.id;
}

TEST_F(AdoptTest, AnUnconfiguredPoolsContainerIsRemovedWithoutAttaching) {
  EXPECT_EQ(manager_->Adopt({Left(NewSessionId(""), "gone")}), 0);
  EXPECT_EQ(world_.started(), 0);
}

}  // namespace
}  // namespace sandbox::service
