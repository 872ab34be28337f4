// Pools on gVisor (`"runtime": "runsc"`) against the real engine: the harness starts under
// runsc (its namespaces, or the process-isolation fallback of isolate "auto"), runs code with
// the same verdicts, and the code sees gVisor's kernel, not the host's. scripts/host.sh
// registers runsc with dockerd when it starts the engine; an engine without it fails this test
// with the engine's message rather than skipping it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <string>

#include "support/engine_fixture.h"

namespace sandbox::service {
namespace {

using sandbox::testing::Engine;
using ::testing::HasSubstr;

class NullObserver final : public exec::RunObserver {};

class GvisorTest : public ::testing::TestWithParam<config::PoolMode> {
 protected:
  void SetUp() override {
    instance_ = sandbox::testing::TestInstanceId("gvisor");
    config_ = sandbox::testing::SmallConfig(GetParam(), instance_);
    config_.pools[0].runtime = "runsc";
    ServiceOptions options;
    options.container_seccomp_json = Engine::Get().container_profile();
    options.run_filter_bpf = Engine::Get().run_filter_bpf();
    auto service = SandboxService::Create(config_, Engine::Get().engine(), options,
                                          sandbox::testing::TestLogger("gvisor-test"));
    ASSERT_TRUE(service.ok()) << service.error().ToString();
    service_ = std::move(*service);
    service_->Start();
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
    service_.reset();
    auto left = RemoveLeftovers(Engine::Get().engine(), instance_, nullptr);
    ASSERT_TRUE(left.ok());
    EXPECT_EQ(*left, 0);
  }

  exec::RunResult Run(const std::string& code, exec::LimitOverrides limits = {}) {
    exec::RunRequest request;
    request.code = code;
    request.limits = limits;
    NullObserver observer;
    exec::CancelToken cancel;
    auto result = service_->Run(request, observer, cancel);
    EXPECT_TRUE(result.ok()) << result.error().ToString();
    return result.ok() ? *result : exec::RunResult{};
  }

  std::string instance_;
  config::Config config_;
  std::unique_ptr<SandboxService> service_;
};

TEST_P(GvisorTest, RunsCodeOnGvisorsKernel) {
  auto r = Run("import platform\nprint(platform.release())");
  ASSERT_EQ(r.verdict, exec::Verdict::kOk) << r.detail << r.stderr_text;
  struct utsname host {};
  ASSERT_EQ(::uname(&host), 0);
  EXPECT_NE(r.stdout_text, std::string(host.release) + "\n")
      << "the code saw the host's kernel release: not running under gVisor";
}

TEST_P(GvisorTest, VerdictsHoldUnderGvisor) {
  auto err = Run("1/0");
  EXPECT_EQ(err.verdict, exec::Verdict::kError);
  ASSERT_TRUE(err.traceback.has_value());
  EXPECT_EQ(err.traceback->type, "ZeroDivisionError");

  exec::LimitOverrides quick;
  quick.timeout_s = 1;
  auto slow = Run("while True:\n    pass", quick);
  EXPECT_EQ(slow.verdict, exec::Verdict::kTimeout) << slow.detail;

  auto net =
      Run("import socket\n"
          "try:\n"
          "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
          "    print('connected')\n"
          "except OSError as e:\n"
          "    print('blocked')\n");
  EXPECT_EQ(net.stdout_text, "blocked\n") << net.stderr_text;

  auto plot =
      Run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n"
          "open('out.txt', 'w').write('x')");
  EXPECT_EQ(plot.verdict, exec::Verdict::kOk) << plot.detail << plot.stderr_text;
  EXPECT_EQ(plot.images.size(), 1U);
  ASSERT_EQ(plot.files.size(), 1U);
  EXPECT_EQ(plot.files[0].path, "out.txt");
}

INSTANTIATE_TEST_SUITE_P(Modes, GvisorTest,
                         ::testing::Values(config::PoolMode::kRecycle, config::PoolMode::kFresh),
                         [](const auto& param_info) {
                           return std::string(config::PoolModeName(param_info.param));
                         });

}  // namespace
}  // namespace sandbox::service
