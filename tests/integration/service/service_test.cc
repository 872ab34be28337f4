// The execution engine through the interface the MCP and HTTP layers use, against the real
// engine, in both pool modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "support/engine_fixture.h"

namespace sandbox::service {
namespace {

using ::testing::HasSubstr;
using sandbox::testing::Engine;

class Recorder final : public exec::RunObserver {
 public:
  void OnStarted() override { started = true; }
  void OnOutput(exec::Stream s, std::string_view bytes) override {
    (s == exec::Stream::kStdout ? out : err).append(bytes);
    ++chunks;
  }
  void OnImage(const exec::Image&) override { ++images; }
  bool started = false;
  std::string out, err;
  int chunks = 0;
  int images = 0;
};

class ServiceTest : public ::testing::TestWithParam<config::PoolMode> {
 protected:
  void SetUp() override {
    instance_ = sandbox::testing::TestInstanceId("service");
    config_ = sandbox::testing::SmallConfig(GetParam(), instance_);
    ServiceOptions options;
    options.container_seccomp_json = Engine::Get().container_profile();
    options.run_filter_bpf = Engine::Get().run_filter_bpf();
    auto service = SandboxService::Create(config_, Engine::Get().client(), options,
                                          sandbox::testing::TestLogger("service-test"));
    ASSERT_TRUE(service.ok()) << service.error().ToString();
    service_ = std::move(*service);
    service_->Start();
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
    service_.reset();
    auto left = RemoveLeftovers(Engine::Get().client(), instance_, nullptr);
    ASSERT_TRUE(left.ok());
    EXPECT_EQ(*left, 0) << "the service left containers behind";
  }

  exec::RunResult Run(const std::string& code, Recorder* recorder = nullptr,
                      exec::LimitOverrides limits = {}) {
    exec::RunRequest request;
    request.code = code;
    request.limits = limits;
    Recorder local;
    exec::CancelToken cancel;
    auto result = service_->Run(request, recorder ? *recorder : local, cancel);
    EXPECT_TRUE(result.ok()) << result.error().ToString();
    return result.ok() ? *result : exec::RunResult{};
  }

  std::string instance_;
  config::Config config_;
  std::unique_ptr<SandboxService> service_;
};

TEST_P(ServiceTest, PrintOne) {
  Recorder rec;
  auto r = Run("print(1)", &rec);
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << r.detail << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "1\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(rec.started);
  EXPECT_EQ(rec.out, "1\n");
}

TEST_P(ServiceTest, TwoFiguresOneShowGiveTwoPngs) {
  auto r = Run(
      "import matplotlib.pyplot as plt\n"
      "plt.figure(); plt.plot([1, 2, 3])\n"
      "plt.figure(); plt.bar([1, 2], [3, 4])\n"
      "plt.show()\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << r.detail << r.stderr_text;
  ASSERT_EQ(r.images.size(), 2u);
  for (const auto& image : r.images) {
    EXPECT_EQ(image.mime_type, "image/png");
    ASSERT_GT(image.data.size(), 8u);
    EXPECT_EQ(image.data.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_GT(image.width, 0);
    EXPECT_GT(image.height, 0);
  }
}

TEST_P(ServiceTest, ExceptionGivesStructuredTraceback) {
  auto r = Run("def f():\n    return 1 / 0\n\nf()\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kError);
  ASSERT_TRUE(r.traceback.has_value());
  EXPECT_EQ(r.traceback->type, "ZeroDivisionError");
  ASSERT_EQ(r.traceback->frames.size(), 2u);
  EXPECT_EQ(r.traceback->frames[0].line, 4);
  EXPECT_EQ(r.traceback->frames[1].function, "f");
  EXPECT_THAT(r.stderr_text, HasSubstr("ZeroDivisionError"));
  EXPECT_THAT(r.stderr_text, ::testing::Not(HasSubstr("harness")));
}

TEST_P(ServiceTest, FinalExpressionValue) {
  auto r = Run("x = 20\nx * 2 + 2");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(*r.value, "42");
}

TEST_P(ServiceTest, LiveOutputArrivesInChunks) {
  Recorder rec;
  auto r = Run("import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)\n", &rec);
  EXPECT_EQ(r.verdict, exec::Verdict::kOk);
  EXPECT_EQ(rec.out, "0\n1\n2\n");
  EXPECT_GE(rec.chunks, 3);
}

TEST_P(ServiceTest, TimeoutVerdict) {
  exec::LimitOverrides limits;
  limits.timeout_s = 1.0;
  auto r = Run("while True:\n    pass\n", nullptr, limits);
  EXPECT_EQ(r.verdict, exec::Verdict::kTimeout) << r.detail;
  // The sandbox (or its replacement) still serves.
  EXPECT_EQ(Run("print('after')").stdout_text, "after\n");
}

TEST_P(ServiceTest, CancelEndsRunQuickly) {
  exec::RunRequest request;
  request.code = "import time\nprint('start', flush=True)\ntime.sleep(60)\n";
  exec::CancelToken cancel;
  struct CancelOnOutput final : exec::RunObserver {
    explicit CancelOnOutput(exec::CancelToken& t) : token(t) {}
    void OnOutput(exec::Stream, std::string_view) override { token.Cancel(); }
    exec::CancelToken& token;
  } observer(cancel);
  auto begin = std::chrono::steady_clock::now();
  auto result = service_->Run(request, observer, cancel);
  auto elapsed = std::chrono::steady_clock::now() - begin;
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->verdict, exec::Verdict::kCancelled) << result->detail;
  EXPECT_LT(elapsed, std::chrono::seconds(30));  // far below the 60 s the code asked for
}

TEST_P(ServiceTest, NothingCrossesRuns) {
  auto first = Run(
      "import subprocess, os\n"
      "open('/tmp/secret', 'w').write('x')\n"
      "open('left.txt', 'w').write('y')\n"
      "subprocess.Popen(['sleep', '50'], start_new_session=True)\n"
      "GLOBAL_MARK = 1\n");
  EXPECT_EQ(first.verdict, exec::Verdict::kOk) << first.detail << first.stderr_text;
  auto second = Run(
      "import os, subprocess\n"
      "print(os.path.exists('/tmp/secret'), os.path.exists('left.txt'))\n"
      "print('GLOBAL_MARK' in globals())\n"
      "def cmd(p):\n"
      "    try:\n"
      "        return open('/proc/%s/cmdline' % p, 'rb').read()\n"
      "    except OSError:\n"
      "        return b''\n"
      "print(sum(1 for p in os.listdir('/proc') if p.isdigit() and cmd(p).startswith(b'sleep')))\n");
  EXPECT_EQ(second.verdict, exec::Verdict::kOk) << second.detail << second.stderr_text;
  EXPECT_EQ(second.stdout_text, "False False\nFalse\n0\n");
}

TEST_P(ServiceTest, RejectsLimitsAboveTheMaximum) {
  exec::RunRequest request;
  request.code = "print(1)";
  request.limits.timeout_s = 100000;
  Recorder rec;
  exec::CancelToken cancel;
  auto result = service_->Run(request, rec, cancel);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(result.error().message(), HasSubstr("timeout_s"));
}

INSTANTIATE_TEST_SUITE_P(BothModes, ServiceTest,
                         ::testing::Values(config::PoolMode::kRecycle, config::PoolMode::kFresh),
                         [](const auto& param_info) {
                           return std::string(config::PoolModeName(param_info.param));
                         });

}  // namespace
}  // namespace sandbox::service
