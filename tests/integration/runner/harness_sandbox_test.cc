// HarnessSandbox against the real engine: a recycled sandbox reports Prepared() again once its
// harness has prepared the next run (the `ready` after `done`), found by polling the stream
// without blocking; and a start whose cancel flag is raised gives up and removes its container.
#include "sandbox/runner/harness_sandbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/runner/sandbox_spec.h"
#include "support/engine_fixture.h"

namespace sandbox::runner {
namespace {

using namespace std::chrono_literals;
using sandbox::testing::Engine;

bool WaitFor(const std::function<bool()>& condition, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return condition();
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

SandboxSetup MakeSetup(const std::string& instance, std::vector<std::string> preload) {
  const config::Config config = sandbox::testing::SmallConfig(config::PoolMode::kRecycle, instance);
  SandboxSetup setup;
  setup.pool = config.pools[0];
  setup.pool.preload = std::move(preload);
  setup.output = config.output;
  setup.container_seccomp_json = Engine::Get().container_profile();
  setup.run_filter_bpf = Engine::Get().run_filter_bpf();
  setup.instance_id = instance;
  return setup;
}

std::vector<std::string> ContainersOf(const std::string& instance, bool running_only) {
  docker::ListOptions list;
  list.all = !running_only;
  list.filters = {{"label", {std::string(kInstanceLabel) + "=" + instance}}};
  auto found = Engine::Get().client().ListContainers(list);
  std::vector<std::string> ids;
  if (found.ok()) {
    for (const auto& c : *found) ids.push_back(c.id);
  }
  return ids;
}

class NullObserver final : public exec::RunObserver {};

TEST(HarnessSandboxTest, PreparedAgainOnceTheHarnessHasForkedTheNextRun) {
  const auto instance = sandbox::testing::TestInstanceId("prepared");
  SandboxSetup setup = MakeSetup(instance, {});  // nothing preloaded: a quick start
  setup.pool.warm_plot = false;
  auto started = HarnessSandbox::Start(Engine::Get().engine(), setup,
                                       sandbox::testing::TestLogger("prepared"));
  ASSERT_TRUE(started.ok()) << started.error().ToString();
  HarnessSandbox& sandbox = **started;
  EXPECT_TRUE(sandbox.Prepared());  // Start() returns after the first `ready`
  for (int run = 1; run <= 2; ++run) {
    NullObserver observer;
    exec::CancelToken cancel;
    auto result = sandbox.Run("print(1)", {}, setup.pool.limits, observer, cancel);
    ASSERT_EQ(result.verdict, exec::Verdict::kOk) << result.detail;
    EXPECT_EQ(result.stdout_text, "1\n");
    ASSERT_TRUE(WaitFor([&] { return sandbox.Prepared(); }, 60s)) << "no `ready` after run " << run;
    // The `ready` that followed this run was read (not the first one again).
    EXPECT_EQ(sandbox.ready_info().value("run_count", -1), run);
    EXPECT_TRUE(sandbox.Reusable());
  }
  started->reset();
  EXPECT_TRUE(ContainersOf(instance, /*running_only=*/false).empty());
}

// Answers the run's stdin asks from another thread, as an MCP task's client does: `lines[i]` for
// ask i+1 (nullopt: EOF), and keeps the asks and the last reply for the test.
class ScriptedStdin final : public exec::RunObserver {
 public:
  explicit ScriptedStdin(std::vector<std::optional<std::string>> lines)
      : lines_(std::move(lines)) {}
  ~ScriptedStdin() override {
    for (auto& t : threads_) t.join();
  }
  bool AnswersInput() const override { return true; }
  void OnInputRequest(const exec::InputRequest& request, const exec::InputReply& reply) override {
    asks.push_back(request);
    const auto i = static_cast<std::size_t>(request.seq - 1);
    auto line = i < lines_.size() ? lines_[i] : std::nullopt;
    last_reply = reply;
    threads_.emplace_back([reply, line] {
      std::this_thread::sleep_for(50ms);  // the run waits: the answer is not in the same call
      reply(line);
    });
  }
  std::vector<exec::InputRequest> asks;
  exec::InputReply last_reply;

 private:
  std::vector<std::optional<std::string>> lines_;
  std::vector<std::thread> threads_;
};

TEST(HarnessSandboxTest, InteractiveStdinAsksTheObserverInIsolatedRunsAndSessions) {
  const auto instance = sandbox::testing::TestInstanceId("stdin");
  for (const bool session : {false, true}) {
    SCOPED_TRACE(session ? "session" : "recycle");
    SandboxSetup setup = MakeSetup(instance, {});
    setup.pool.warm_plot = false;
    setup.pool.interactive_input = true;
    setup.session = session;
    auto started =
        HarnessSandbox::Start(Engine::Get().engine(), setup, sandbox::testing::TestLogger("stdin"));
    ASSERT_TRUE(started.ok()) << started.error().ToString();
    HarnessSandbox& sandbox = **started;
    if (session) {
      ASSERT_TRUE(sandbox.BeginSession(setup.pool.limits, {}).ok());
    }
    const std::string code =
        "name = input('name? ')\nprint('hi', name)\ntry:\n    input()\nexcept EOFError:\n"
        "    print('eof')\nimport sys\nprint(repr(sys.stdin.read()))\n";
    exec::CancelToken cancel;
    ScriptedStdin observer({"bob", std::nullopt});
    auto result = sandbox.Run(code, {}, setup.pool.limits, observer, cancel);
    ASSERT_EQ(result.verdict, exec::Verdict::kOk) << result.detail << result.stderr_text;
    EXPECT_EQ(result.stdout_text, "name? hi bob\neof\n''\n");  // at EOF for good: no third ask
    ASSERT_EQ(observer.asks.size(), 2u);
    EXPECT_EQ(observer.asks[0].seq, 1);
    EXPECT_EQ(observer.asks[0].prompt, "name? ");
    EXPECT_EQ(observer.asks[1].prompt, "");
    // A reply after the run's end goes nowhere, and the sandbox serves the next run.
    observer.last_reply("late");
    ASSERT_TRUE(WaitFor([&] { return sandbox.Prepared() || session; }, 60s));
    NullObserver plain;  // answers nothing: input() reads EOF at once
    auto next = sandbox.Run("input()", {}, setup.pool.limits, plain, cancel);
    EXPECT_EQ(next.verdict, exec::Verdict::kError);
    ASSERT_TRUE(next.traceback.has_value());
    EXPECT_EQ(next.traceback->type, "EOFError");
    EXPECT_TRUE(sandbox.Reusable());
    started->reset();
  }
  EXPECT_TRUE(ContainersOf(instance, /*running_only=*/false).empty());
}

TEST(HarnessSandboxTest, WithoutThePoolOptionStdinIsEofEvenForAnObserverThatAnswers) {
  const auto instance = sandbox::testing::TestInstanceId("nostdin");
  SandboxSetup setup = MakeSetup(instance, {});
  setup.pool.warm_plot = false;  // interactive_input stays false (the default)
  auto started =
      HarnessSandbox::Start(Engine::Get().engine(), setup, sandbox::testing::TestLogger("nostdin"));
  ASSERT_TRUE(started.ok()) << started.error().ToString();
  exec::CancelToken cancel;
  ScriptedStdin observer({"bob"});
  auto result = (*started)->Run("input()", {}, setup.pool.limits, observer, cancel);
  EXPECT_EQ(result.verdict, exec::Verdict::kError);
  EXPECT_TRUE(observer.asks.empty());
  started->reset();
  EXPECT_TRUE(ContainersOf(instance, /*running_only=*/false).empty());
}

TEST(HarnessSandboxTest, CancelledStartGivesUpAndRemovesItsContainer) {
  const auto instance = sandbox::testing::TestInstanceId("cancel-start");
  // A long preload, so the harness is still loading when the cancel comes.
  const SandboxSetup setup =
      MakeSetup(instance, {"numpy", "pandas", "matplotlib", "scipy", "scipy.stats", "sympy"});
  std::atomic<bool> cancel{false};
  auto start = std::async(std::launch::async, [&] {
    return HarnessSandbox::Start(Engine::Get().engine(), setup,
                                 sandbox::testing::TestLogger("cancel-start"), &cancel);
  });
  // Cancel once the container runs, i.e. while the start waits for the harness.
  ASSERT_TRUE(WaitFor(
      [&] {
        return !ContainersOf(instance, /*running_only=*/true).empty() ||
               start.wait_for(0s) == std::future_status::ready;
      },
      120s));
  cancel = true;
  auto result = start.get();
  ASSERT_FALSE(result.ok()) << "the start finished before it was cancelled";
  EXPECT_EQ(result.error().code(), ErrorCode::kCancelled) << result.error().ToString();
  EXPECT_TRUE(ContainersOf(instance, /*running_only=*/false).empty())
      << "the cancelled start left its container";
}

}  // namespace
}  // namespace sandbox::runner
