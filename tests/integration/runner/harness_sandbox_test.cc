// HarnessSandbox against the real engine: a recycled sandbox reports Prepared() again once its
// harness has prepared the next run (the `ready` after `done`), found by polling the stream
// without blocking; and a start whose cancel flag is raised gives up and removes its container.
#include "sandbox/runner/harness_sandbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
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
  auto started = HarnessSandbox::Start(Engine::Get().client(), setup,
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

TEST(HarnessSandboxTest, CancelledStartGivesUpAndRemovesItsContainer) {
  const auto instance = sandbox::testing::TestInstanceId("cancel-start");
  // A long preload, so the harness is still loading when the cancel comes.
  const SandboxSetup setup =
      MakeSetup(instance, {"numpy", "pandas", "matplotlib", "scipy", "scipy.stats", "sympy"});
  std::atomic<bool> cancel{false};
  auto start = std::async(std::launch::async, [&] {
    return HarnessSandbox::Start(Engine::Get().client(), setup,
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
