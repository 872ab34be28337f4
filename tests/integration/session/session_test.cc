// Sessions against the real engine: state and files that last between calls, the stated
// condition after a limit kill (restarted empty), quotas, ownership, expiry, and that every
// session container is gone when its session ends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/session_manager.h"
#include "support/engine_fixture.h"
#include "support/secret_scan.h"

namespace sandbox::service {
namespace {

using sandbox::testing::Engine;
using ::testing::HasSubstr;

class NullObserver final : public exec::RunObserver {};

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    instance_ = sandbox::testing::TestInstanceId("session");
    config_ = sandbox::testing::SmallConfig(config::PoolMode::kRecycle, instance_);
    config_.pools[0].min_idle = 0;  // one-shot runs are not under test here
    config_.sessions.warm = 1;
    config_.sessions.max_total = 4;
    config_.sessions.max_per_principal = 2;
    config_.sessions.busy_wait = std::chrono::milliseconds(0);
    Customize(config_);
  }

  // Tests adjust the configuration here before the engine objects are built.
  virtual void Customize(config::Config& /*config*/) {}

  void Build() {
    ServiceOptions options;
    options.container_seccomp_json = Engine::Get().container_profile();
    options.run_filter_bpf = Engine::Get().run_filter_bpf();
    auto logger = sandbox::testing::TestLogger("session-test");
    auto service = SandboxService::Create(config_, Engine::Get().engine(), options, logger);
    ASSERT_TRUE(service.ok()) << service.error().ToString();
    service_ = std::move(*service);
    auto sessions =
        SessionManager::Create(config_, Engine::Get().engine(), *service_, options, logger);
    ASSERT_TRUE(sessions.ok()) << sessions.error().ToString();
    sessions_ = std::move(*sessions);
    service_->Start();
    sessions_->Start();
  }

  void TearDown() override {
    if (sessions_) sessions_->Shutdown();
    if (service_) service_->Shutdown();
    sessions_.reset();
    service_.reset();
    auto left = RemoveLeftovers(Engine::Get().engine(), instance_, nullptr);
    ASSERT_TRUE(left.ok());
    EXPECT_EQ(*left, 0) << "sessions left containers behind";
  }

  std::string NewSession(const std::string& principal = "alice", exec::LimitOverrides limits = {}) {
    exec::SessionCreateRequest request;
    request.limits = limits;
    auto info = sessions_->Create(principal, request);
    EXPECT_TRUE(info.ok()) << info.error().ToString();
    if (!info.ok()) return {};
    EXPECT_EQ(info->id.size(), 32U);
    return info->id;
  }

  exec::RunResult Run(const std::string& id, const std::string& code,
                      std::optional<double> timeout_s = std::nullopt,
                      std::vector<exec::InputFile> files = {},
                      const std::string& principal = "alice") {
    exec::RunRequest request;
    request.code = code;
    request.files = std::move(files);
    request.limits.timeout_s = timeout_s;
    NullObserver observer;
    exec::CancelToken cancel;
    auto result = sessions_->Run(principal, id, request, observer, cancel);
    EXPECT_TRUE(result.ok()) << result.error().ToString();
    return result.ok() ? *result : exec::RunResult{};
  }

  // Session containers of this test's instance that still exist.
  int SessionContainers() {
    docker::ListOptions list;
    list.all = true;
    list.filters = {{"label",
                     {std::string(runner::kInstanceLabel) + "=" + instance_,
                      std::string(runner::kModeLabel) + "=session"}}};
    auto found = Engine::Get().client().ListContainers(list);
    EXPECT_TRUE(found.ok());
    return found.ok() ? static_cast<int>(found->size()) : -1;
  }

  // Waits (bounded, no timing assertion) until `pred` holds.
  template <typename Pred>
  bool Eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return pred();
  }

  std::string instance_;
  config::Config config_;
  std::unique_ptr<SandboxService> service_;
  std::unique_ptr<SessionManager> sessions_;
};

TEST_F(SessionTest, GlobalsImportsAndFunctionsPersist) {
  Build();
  auto id = NewSession();
  auto r1 = Run(id, "import statistics as st\nx = 41\ndef twice(v):\n    return 2 * v\n");
  ASSERT_EQ(r1.verdict, exec::Verdict::kOk) << r1.detail << r1.stderr_text;
  EXPECT_EQ(r1.session_id, id);
  auto r2 = Run(id, "x + 1");
  ASSERT_EQ(r2.verdict, exec::Verdict::kOk) << r2.detail << r2.stderr_text;
  ASSERT_TRUE(r2.value.has_value());
  EXPECT_EQ(*r2.value, "42");
  auto r3 = Run(id, "print(twice(st.mean([1, 2, 3])))");
  EXPECT_EQ(r3.stdout_text, "4\n") << r3.stderr_text;
  EXPECT_FALSE(r3.session_reset);
  // An exception and sys.exit end the cell, not the session.
  auto r4 = Run(id, "raise ValueError('boom')");
  EXPECT_EQ(r4.verdict, exec::Verdict::kError);
  auto r5 = Run(id, "import sys\nsys.exit(2)");
  EXPECT_EQ(r5.exit_code, 2);
  EXPECT_FALSE(r5.session_reset);
  auto r6 = Run(id, "x");
  ASSERT_TRUE(r6.value.has_value()) << r6.stderr_text;
  EXPECT_EQ(*r6.value, "41");
}

// A cell's figures (shown, then still open at its end) come back with that cell only.
TEST_F(SessionTest, EachCellReturnsItsOpenFiguresOnce) {
  Build();
  auto id = NewSession();
  auto widths = [](const exec::RunResult& r) {
    std::vector<int> w;
    for (const auto& image : r.images) w.push_back(image.width);
    return w;
  };
  auto r1 = Run(id, "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])");
  ASSERT_EQ(r1.verdict, exec::Verdict::kOk) << r1.detail << r1.stderr_text;
  EXPECT_THAT(widths(r1), ::testing::ElementsAre(640));
  auto r2 = Run(id, "x = 1");
  ASSERT_EQ(r2.verdict, exec::Verdict::kOk) << r2.detail << r2.stderr_text;
  EXPECT_TRUE(r2.images.empty()) << "an earlier cell's figure came back again";
  auto r3 = Run(id,
                "plt.figure(figsize=(2, 1)); plt.show()\n"
                "plt.figure(figsize=(3, 1)); plt.plot([1])\n"
                "plt.figure(figsize=(4, 1)); plt.close()\n");
  ASSERT_EQ(r3.verdict, exec::Verdict::kOk) << r3.detail << r3.stderr_text;
  EXPECT_THAT(widths(r3), ::testing::ElementsAre(200, 300));
  auto r4 = Run(id, "plt.figure(figsize=(2, 1))\n1 / 0");
  EXPECT_EQ(r4.verdict, exec::Verdict::kError);
  EXPECT_FALSE(r4.session_reset);
  EXPECT_THAT(widths(r4), ::testing::ElementsAre(200));
  auto r5 = Run(id, "len(plt.get_fignums())");
  ASSERT_TRUE(r5.value.has_value()) << r5.stderr_text;
  EXPECT_EQ(*r5.value, "0");
  EXPECT_TRUE(r5.images.empty());
}

TEST_F(SessionTest, FilesGoInComeOutAndAreListed) {
  Build();
  auto id = NewSession();
  auto put = sessions_->PutFiles("alice", id, {{"data/input.csv", "a,b\n1,2\n3,4\n"}});
  ASSERT_TRUE(put.ok()) << put.error().ToString();
  ASSERT_EQ(put->size(), 1U);
  EXPECT_EQ((*put)[0].path, "data/input.csv");
  EXPECT_EQ((*put)[0].size, 12);

  auto r1 =
      Run(id, "import pandas as pd\ndf = pd.read_csv('data/input.csv')\nprint(int(df['b'].sum()))");
  ASSERT_EQ(r1.verdict, exec::Verdict::kOk) << r1.detail << r1.stderr_text;
  EXPECT_EQ(r1.stdout_text, "6\n");
  EXPECT_TRUE(r1.files.empty()) << "an uploaded file the cell did not change is not returned";

  auto r2 = Run(id, "df.to_csv('out.csv', index=False)\nopen('note.txt', 'w').write('hi')");
  ASSERT_EQ(r2.verdict, exec::Verdict::kOk) << r2.detail << r2.stderr_text;
  ASSERT_EQ(r2.files.size(), 2U);
  EXPECT_EQ(r2.files[0].path, "note.txt");
  EXPECT_EQ(r2.files[1].path, "out.csv");

  auto r3 = Run(id, "print(len(df))");
  EXPECT_TRUE(r3.files.empty()) << "files of earlier cells are not returned again";

  auto list = sessions_->ListFiles("alice", id);
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  std::vector<std::string> paths;
  for (const auto& f : list->files) paths.push_back(f.path);
  EXPECT_THAT(paths, ::testing::ElementsAre("data/input.csv", "note.txt", "out.csv"));

  auto note = sessions_->GetFile("alice", id, "note.txt");
  ASSERT_TRUE(note.ok()) << note.error().ToString();
  EXPECT_EQ(note->data, "hi");
  EXPECT_EQ(note->mime_type, "text/plain");

  auto missing = sessions_->GetFile("alice", id, "nope.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound) << missing.error().ToString();
  auto escape = sessions_->GetFile("alice", id, "../etc/passwd");
  ASSERT_FALSE(escape.ok());
  EXPECT_EQ(escape.error().code(), ErrorCode::kInvalidArgument) << escape.error().ToString();
  auto dir = sessions_->GetFile("alice", id, "data");
  ASSERT_FALSE(dir.ok());

  auto del = sessions_->DeleteFile("alice", id, "note.txt");
  ASSERT_TRUE(del.ok()) << del.error().ToString();
  auto after = sessions_->ListFiles("alice", id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->files.size(), 2U);
}

// Neither a restarted session nor another session sees anything of a session's data: every run
// process is forked by the harness's forker, which never held a request.
TEST_F(SessionTest, NoSessionSeesAnotherSessionsData) {
  Build();
  const sandbox::testing::Secrets secrets("session");
  auto id = NewSession();
  auto put = sessions_->PutFiles("alice", id, {{"in.csv", secrets.Input()}});
  ASSERT_TRUE(put.ok()) << put.error().ToString();
  auto a = Run(id, secrets.ProducerCode());
  ASSERT_EQ(a.verdict, exec::Verdict::kOk) << a.detail << a.stderr_text;
  ASSERT_EQ(a.stdout_text, secrets.Out() + "\n");
  ASSERT_EQ(a.files.size(), 1U);
  auto reset = Run(id, "import os\nos._exit(0)");
  EXPECT_TRUE(reset.session_reset) << reset.detail;
  auto b = Run(id, secrets.ScannerCode(), 120);
  EXPECT_EQ(b.verdict, exec::Verdict::kOk) << b.detail << b.stderr_text;
  EXPECT_EQ(b.stdout_text, sandbox::testing::kNothingFound) << b.stderr_text;
  auto other = NewSession("bob");
  auto c = Run(other, secrets.ScannerCode(), 120, {}, "bob");
  EXPECT_EQ(c.verdict, exec::Verdict::kOk) << c.detail << c.stderr_text;
  EXPECT_EQ(c.stdout_text, sandbox::testing::kNothingFound) << c.stderr_text;
}

// A cell's records are claims about itself, checked; tracebacks are bounded; list_files and the
// files out survive any tree the code builds.
TEST_F(SessionTest, ClaimsAreCheckedAndOddTreesListed) {
  Build();
  auto id = NewSession();
  const std::string forge =
      "import json, os, struct\n"
      "def forge(rec):\n"
      "    data = json.dumps(rec).encode()\n"
      "    for fd in range(3, 64):\n"
      "        try:\n"
      "            os.write(fd, struct.pack('>I', len(data)) + b'J' + data)\n"
      "        except OSError:\n"
      "            pass\n";
  auto files = Run(id, forge +
                           "for p in ('../../etc/forged', '/etc/passwd', './x', 'a//b', 'n\\nl'):\n"
                           "    forge({'t': 'file', 'path': p, 'mime_type': 'x', 'offset': 0,\n"
                           "           'last': True, 'data_b64': 'eA=='})\n"
                           "open('real.txt', 'w').write('r')\n");
  EXPECT_EQ(files.verdict, exec::Verdict::kOk) << files.detail << files.stderr_text;
  ASSERT_EQ(files.files.size(), 1U);
  EXPECT_EQ(files.files[0].path, "real.txt");
  EXPECT_TRUE(files.files_truncated);
  auto internal = Run(id, "forge({'t': 'internal', 'message': 'pwned: attacker text'})\n");
  EXPECT_EQ(internal.verdict, exec::Verdict::kError);
  EXPECT_THAT(internal.detail, ::testing::Not(HasSubstr("pwned"))) << internal.detail;
  EXPECT_FALSE(internal.session_reset);

  auto deep = Run(id,
                  "import sys\nsys.setrecursionlimit(200000)\n"
                  "def f(n):\n    return f(n + 1)\nf(0)\n",
                  120);
  EXPECT_EQ(deep.verdict, exec::Verdict::kError) << deep.detail;
  ASSERT_TRUE(deep.traceback.has_value());
  EXPECT_EQ(deep.traceback->type, "RecursionError");
  EXPECT_EQ(deep.traceback->frames.size(), 100U);
  EXPECT_LT(deep.stderr_text.size(), 64U << 10);
  EXPECT_FALSE(deep.session_reset);

  auto tree = Run(id,
                  "import os, socket\nos.mkdir('t')\nos.chdir('t')\n"
                  "open(b'bad\\xff.txt', 'w').write('b')\nopen('new\\nline', 'w').write('n')\n"
                  "os.symlink('loop', 'loop')\nos.symlink('.', 'self')\nos.mkfifo('fifo')\n"
                  "s = socket.socket(socket.AF_UNIX)\ns.bind('sock')\n"
                  "open('ok.txt', 'w').write('ok')\n"
                  "for _ in range(1000):\n    os.mkdir('d')\n    os.chdir('d')\n"
                  "open('deep.txt', 'w').write('deep')\nos.chdir('/tmp/work')\n");
  EXPECT_EQ(tree.verdict, exec::Verdict::kOk) << tree.detail << tree.stderr_text;
  ASSERT_EQ(tree.files.size(), 1U);
  EXPECT_EQ(tree.files[0].path, "t/ok.txt");
  EXPECT_TRUE(tree.files_truncated);
  auto list = sessions_->ListFiles("alice", id);
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  std::vector<std::string> paths;
  for (const auto& f : list->files) paths.push_back(f.path);
  EXPECT_THAT(paths, ::testing::ElementsAre("real.txt", "t/ok.txt"));
  EXPECT_TRUE(list->truncated);
}

TEST_F(SessionTest, OversizedUploadAndDownloadAreRefusedClearly) {
  config_.sessions.max_file_bytes = 1 << 20;
  config_.sessions.max_upload_bytes = 1 << 20;
  Build();
  auto id = NewSession();
  auto big = sessions_->PutFiles("alice", id, {{"big.bin", std::string((1 << 20) + 1, 'x')}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), ErrorCode::kLimit);
  EXPECT_THAT(big.error().message(), HasSubstr("more than the limit"));
  auto r = Run(id, "open('big.bin', 'wb').write(b'x' * (2 << 20))");
  ASSERT_EQ(r.verdict, exec::Verdict::kOk) << r.detail << r.stderr_text;
  auto get = sessions_->GetFile("alice", id, "big.bin");
  ASSERT_FALSE(get.ok());
  EXPECT_EQ(get.error().code(), ErrorCode::kLimit) << get.error().ToString();
}

TEST_F(SessionTest, TimeoutRestartsTheSessionEmpty) {
  Build();
  auto id = NewSession();
  ASSERT_TRUE(sessions_->PutFiles("alice", id, {{"keep.txt", "x"}}).ok());
  auto r1 = Run(id, "x = 1");
  ASSERT_EQ(r1.verdict, exec::Verdict::kOk);
  auto r2 = Run(id, "while True:\n    pass", 1.0);
  EXPECT_EQ(r2.verdict, exec::Verdict::kTimeout);
  EXPECT_TRUE(r2.session_reset);
  EXPECT_THAT(r2.detail, HasSubstr("restarted empty"));
  auto r3 = Run(id, "x");
  EXPECT_EQ(r3.verdict, exec::Verdict::kError);
  ASSERT_TRUE(r3.traceback.has_value());
  EXPECT_EQ(r3.traceback->type, "NameError");
  auto files = sessions_->ListFiles("alice", id);
  ASSERT_TRUE(files.ok());
  EXPECT_TRUE(files->files.empty());
  auto info = sessions_->Get("alice", id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->restarts, 1);
  EXPECT_EQ(info->runs, 3);
}

TEST_F(SessionTest, ADeadContainerIsReplacedAndTheNextCallSaysSo) {
  Build();
  auto id = NewSession();
  ASSERT_EQ(Run(id, "x = 1").verdict, exec::Verdict::kOk);
  // Kill the session's container behind the server's back. The warm spare carries the same
  // labels; it is killed too and its pool simply replaces it.
  docker::ListOptions list;
  list.filters = {{"label",
                   {std::string(runner::kInstanceLabel) + "=" + instance_,
                    std::string(runner::kModeLabel) + "=session"}}};
  auto found = Engine::Get().client().ListContainers(list);
  ASSERT_TRUE(found.ok());
  int killed = 0;
  for (const auto& c : *found) {
    ASSERT_TRUE(Engine::Get().client().KillContainer(c.id, "SIGKILL").ok());
    ++killed;
  }
  ASSERT_GE(killed, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto r = Run(id, "print('alive')\n'x' in globals()");
  ASSERT_EQ(r.verdict, exec::Verdict::kOk) << r.detail << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "alive\n");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(*r.value, "False");
  EXPECT_THAT(r.session_notice, HasSubstr("restarted empty"));
  auto info = sessions_->Get("alice", id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->restarts, 1);
}

TEST_F(SessionTest, QuotasAndOwnership) {
  Build();
  auto a1 = NewSession("alice");
  auto a2 = NewSession("alice");
  exec::SessionCreateRequest request;
  auto a3 = sessions_->Create("alice", request);
  ASSERT_FALSE(a3.ok());
  EXPECT_EQ(a3.error().code(), ErrorCode::kLimit);
  EXPECT_THAT(a3.error().message(), HasSubstr("limit of 2 sessions"));

  auto b1 = NewSession("bob");
  // Bob cannot see, run in or close Alice's sessions: they look like missing ones.
  auto list = sessions_->List("bob");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1U);
  EXPECT_EQ((*list)[0].id, b1);
  exec::RunRequest run;
  run.code = "print(1)";
  NullObserver observer;
  exec::CancelToken cancel;
  auto foreign = sessions_->Run("bob", a1, run, observer, cancel);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(sessions_->Close("bob", a1).error().code(), ErrorCode::kNotFound);

  // The server-wide limit (4) counts everyone.
  auto b2 = NewSession("bob");
  auto b3 = sessions_->Create("carol", request);
  ASSERT_FALSE(b3.ok());
  EXPECT_THAT(b3.error().message(), HasSubstr("server's limit of 4"));

  ASSERT_TRUE(sessions_->Close("alice", a2).ok());
  auto gone = sessions_->Run("alice", a2, run, observer, cancel);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Eventually([&] { return SessionContainers() <= 4; }))
      << "a closed session's container was not removed";
  auto listed = sessions_->List("alice");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ((*listed)[0].id, a1);
  ASSERT_TRUE((*listed)[0].memory_bytes.has_value());
  EXPECT_GT(*(*listed)[0].memory_bytes, 0);
  (void)b2;
}

TEST_F(SessionTest, BusySessionRefusesASecondCall) {
  Build();
  auto id = NewSession();
  std::thread slow([&] { Run(id, "import time\ntime.sleep(3)"); });
  ASSERT_TRUE(Eventually([&] {
    auto info = sessions_->Get("alice", id);
    return info.ok() && info->busy;
  }));
  exec::RunRequest run;
  run.code = "print(1)";
  NullObserver observer;
  exec::CancelToken cancel;
  auto second = sessions_->Run("alice", id, run, observer, cancel);
  slow.join();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kBusy);
}

class ExpiringSessionTest : public SessionTest {
 protected:
  void Customize(config::Config& config) override {
    config.sessions.idle_timeout = std::chrono::seconds(2);
    config.sessions.max_lifetime = std::chrono::seconds(4);
  }
};

TEST_F(ExpiringSessionTest, IdleSessionsEndAndTheirContainersGo) {
  Build();
  auto id = NewSession();
  ASSERT_TRUE(
      Eventually([&] { return !sessions_->Get("alice", id).ok(); }, std::chrono::seconds(30)));
  auto err = sessions_->Get("alice", id).error();
  EXPECT_EQ(err.code(), ErrorCode::kNotFound);
  EXPECT_THAT(err.message(), HasSubstr("session_create"));
  // Only the warm spare (sessions.warm = 1) may remain.
  EXPECT_TRUE(Eventually([&] { return SessionContainers() <= 1; }));
  EXPECT_EQ(sessions_->stats().expired_total, 1U);
}

}  // namespace
}  // namespace sandbox::service
