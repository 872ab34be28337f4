// The execution engine through the interface the MCP and HTTP layers use, against the real
// engine, in both pool modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "integration/service/shared_service.h"
#include "support/engine_fixture.h"

namespace sandbox::service {
namespace {

using sandbox::testing::Engine;
using ::testing::HasSubstr;

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
    auto service = SandboxService::Create(config_, Engine::Get().engine(), options,
                                          sandbox::testing::TestLogger("service-test"));
    ASSERT_TRUE(service.ok()) << service.error().ToString();
    service_ = std::move(*service);
    service_->Start();
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
    service_.reset();
    auto left = RemoveLeftovers(Engine::Get().engine(), instance_, nullptr);
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
  auto r =
      Run("import matplotlib.pyplot as plt\n"
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
  auto r =
      Run("import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)\n", &rec);
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
  // Proof of the kill without a clock: had the code gone on, it would print "finished".
  request.code = "import time\nprint('start', flush=True)\ntime.sleep(60)\nprint('finished')\n";
  exec::CancelToken cancel;
  struct CancelOnOutput final : exec::RunObserver {
    explicit CancelOnOutput(exec::CancelToken& t) : token(t) {}
    void OnOutput(exec::Stream, std::string_view) override { token.Cancel(); }
    exec::CancelToken& token;
  } observer(cancel);
  auto result = service_->Run(request, observer, cancel);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->verdict, exec::Verdict::kCancelled) << result->detail;
  EXPECT_EQ(result->stdout_text.find("finished"), std::string::npos) << result->stdout_text;
}

TEST_P(ServiceTest, NothingCrossesRuns) {
  auto first =
      Run("import subprocess, os\n"
          "open('/tmp/secret', 'w').write('x')\n"
          "open('left.txt', 'w').write('y')\n"
          "subprocess.Popen(['sleep', '50'], start_new_session=True)\n"
          "GLOBAL_MARK = 1\n");
  EXPECT_EQ(first.verdict, exec::Verdict::kOk) << first.detail << first.stderr_text;
  auto second =
      Run("import os, subprocess\n"
          "print(os.path.exists('/tmp/secret'), os.path.exists('left.txt'))\n"
          "print('GLOBAL_MARK' in globals())\n"
          "def cmd(p):\n"
          "    try:\n"
          "        return open('/proc/%s/cmdline' % p, 'rb').read()\n"
          "    except OSError:\n"
          "        return b''\n"
          "print(sum(1 for p in os.listdir('/proc') if p.isdigit() and "
          "cmd(p).startswith(b'sleep')))\n");
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

// Results and limits through the service, both modes, one shared service per mode (each test
// leaves the sandbox, or its replacement, able to serve the next).
class ServiceResultsTest : public ::testing::TestWithParam<config::PoolMode> {
 protected:
  static void SetUpTestSuite() { services_ = new sandbox::testing::SharedServices("results"); }
  static void TearDownTestSuite() {
    services_->Finish();
    delete services_;
    services_ = nullptr;
  }
  SandboxService* service() { return services_->Get(GetParam()); }
  exec::RunResult Run(const std::string& code, exec::LimitOverrides limits = {},
                      std::vector<exec::InputFile> files = {}) {
    return sandbox::testing::RunCode(service(), code, limits, std::move(files));
  }
  void ExpectServes() {
    auto r = Run("print('next')");
    EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
    EXPECT_EQ(r.stdout_text, "next\n");
  }
  static sandbox::testing::SharedServices* services_;
};

sandbox::testing::SharedServices* ServiceResultsTest::services_ = nullptr;

TEST_P(ServiceResultsTest, MemoryBombGivesMemoryVerdict) {
  // 4 GiB in a container of 768 MiB: the cgroup's OOM killer ends the run (its process has
  // oom_score_adj 1000), not the zygote.
  auto r = Run("b = bytearray(4 << 30)\nprint('unreachable')\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kMemory) << sandbox::testing::Describe(r);
  EXPECT_EQ(r.stdout_text, "");
  ExpectServes();
  r = Run("x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kMemory) << sandbox::testing::Describe(r);
  ExpectServes();
}

TEST_P(ServiceResultsTest, NarrowedMemoryGivesMemoryVerdict) {
  const std::string code = "b = bytearray(200 << 20)\nprint(len(b) >> 20)\n";
  // Within the pool's budget (512 MiB) it runs...
  auto r = Run(code);
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_EQ(r.stdout_text, "200\n");
  // ...narrowed to 64 MiB for this request it fails with MemoryError: verdict memory.
  exec::LimitOverrides narrow;
  narrow.memory_bytes = 64LL << 20;
  r = Run(code, narrow);
  EXPECT_EQ(r.verdict, exec::Verdict::kMemory) << sandbox::testing::Describe(r);
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_TRUE(r.traceback.has_value());
  EXPECT_EQ(r.traceback->type, "MemoryError");
  EXPECT_THAT(r.detail, HasSubstr("67108864"));
  // The narrowing is per request: the next run has the pool's budget again.
  r = Run(code);
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
}

TEST_P(ServiceResultsTest, PrintFloodGivesOutputLimitWithMarker) {
  exec::LimitOverrides limits;
  limits.output_bytes = 4096;
  auto r = Run("while True:\n    print('x' * 99)\n", limits);
  EXPECT_EQ(r.verdict, exec::Verdict::kOutputLimit) << sandbox::testing::Describe(r);
  EXPECT_TRUE(r.output_truncated);
  const std::string marker = "\n[output truncated: limit of 4096 bytes reached]\n";
  ASSERT_GE(r.stdout_text.size(), marker.size());
  EXPECT_EQ(r.stdout_text.substr(r.stdout_text.size() - marker.size()), marker);
  EXPECT_EQ(r.stdout_text.size() + r.stderr_text.size(), 4096 + marker.size());
  ExpectServes();
}

TEST_P(ServiceResultsTest, SegfaultGivesSignalVerdict) {
  auto r =
      Run("import os, signal\nprint('before', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kSignal) << sandbox::testing::Describe(r);
  ASSERT_TRUE(r.signal.has_value());
  EXPECT_EQ(*r.signal, 11);
  EXPECT_EQ(r.stdout_text, "before\n");
  ExpectServes();
}

TEST_P(ServiceResultsTest, SysExitGivesErrorWithExitCode) {
  auto r = Run("import sys\nsys.exit(3)\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kError) << sandbox::testing::Describe(r);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.traceback.has_value());
  EXPECT_FALSE(r.signal.has_value());
}

TEST_P(ServiceResultsTest, FilesInAndOut) {
  std::vector<exec::InputFile> files = {{"data/in.csv", "a,b\n1,2\n3,4\n"},
                                        {"notes.txt", "unchanged"}};
  auto r =
      Run("import csv\n"
          "rows = list(csv.DictReader(open('data/in.csv')))\n"
          "with open('out.csv', 'w', newline='') as f:\n"
          "    w = csv.writer(f)\n"
          "    w.writerow(['a', 'b', 'sum'])\n"
          "    for row in rows:\n"
          "        w.writerow([row['a'], row['b'], int(row['a']) + int(row['b'])])\n"
          "len(rows)\n",
          {}, files);
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(*r.value, "2");
  // Unchanged input files do not come back; the new file does.
  ASSERT_EQ(r.files.size(), 1u) << (r.files.empty() ? "" : r.files[0].path);
  const auto& out = r.files[0];
  const std::string expected = "a,b,sum\r\n1,2,3\r\n3,4,7\r\n";
  EXPECT_EQ(out.path, "out.csv");
  EXPECT_EQ(out.size, static_cast<std::int64_t>(expected.size()));
  EXPECT_EQ(out.mime_type, "text/csv");
  EXPECT_EQ(out.data, expected);
  EXPECT_FALSE(r.files_truncated);
}

// The server's input limits are the harness's too (config files_in): every count the server
// accepts reaches the code (the harness once refused more than 50 of the server's 64 with
// verdict error), and one more is refused before the run.
TEST_P(ServiceResultsTest, InputFileLimitIsTheSameOnBothSidesOfTheWall) {
  std::vector<exec::InputFile> files;
  for (int i = 0; i < 64; ++i) files.push_back({"in/f" + std::to_string(i) + ".txt", "x"});
  auto r = Run("import os\nprint(len(os.listdir('in')))", {}, files);
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_EQ(r.stdout_text, "64\n");

  files.push_back({"in/one-more.txt", "x"});
  exec::RunRequest request;
  request.code = "print(1)";
  request.files = files;
  sandbox::testing::Recorder rec;
  exec::CancelToken cancel;
  auto refused = service()->Run(request, rec, cancel);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message(), HasSubstr("more than the limit of 64 per run"));
  EXPECT_FALSE(rec.started);
}

TEST_P(ServiceResultsTest, InvalidInputFilePathIsRejected) {
  for (const std::string path : {"../escape.txt", "/etc/passwd", "a/../../b", ""}) {
    exec::RunRequest request;
    request.code = "print(1)";
    request.files = {{path, "x"}};
    sandbox::testing::Recorder rec;
    exec::CancelToken cancel;
    auto result = service()->Run(request, rec, cancel);
    ASSERT_FALSE(result.ok()) << "path \"" << path << "\" was accepted";
    EXPECT_EQ(result.error().code(), ErrorCode::kInvalidArgument) << path;
    EXPECT_THAT(result.error().message(), HasSubstr("files[0].path")) << path;
    EXPECT_FALSE(rec.started);
  }
}

TEST_P(ServiceResultsTest, UnicodeAndInvalidUtf8PassThrough) {
  auto r =
      Run("import os, sys\n"
          "print('h\\u00e9llo \\u2713 \\u65e5\\u672c \\U0001F600')\n"
          "os.write(1, b'\\xff\\xfe\\x80 raw \\xc3\\x28\\n')\n"
          "sys.stdout.write('\\udcff\\n')\n"  // surrogateescape: the byte 0xff
          "os.write(2, b'err \\xe2\\x82\\n')\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_EQ(r.stdout_text,
            "h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\n"
            "\xff\xfe\x80 raw \xc3\x28\n"
            "\xff\n");
  EXPECT_EQ(r.stderr_text, "err \xe2\x82\n");
}

INSTANTIATE_TEST_SUITE_P(BothModes, ServiceResultsTest,
                         ::testing::Values(config::PoolMode::kRecycle, config::PoolMode::kFresh),
                         sandbox::testing::ModeParamName);

// Figures: those shown with plt.show(), then those still open when the code ends, each once; in
// both modes, with pyplot preloaded by the harness or imported by the cell itself.
struct FigureParam {
  config::PoolMode mode;
  bool preloaded;
};

class FigureTest : public ::testing::TestWithParam<FigureParam> {
 protected:
  static void SetUpTestSuite() {
    preloaded_ = new sandbox::testing::SharedServices("figures");
    // warm_plot imports pyplot too: neither, so that the cell's import is the first.
    imported_ = new sandbox::testing::SharedServices("figures-imported", [](config::PoolConfig& p) {
      p.preload.clear();
      p.warm_plot = false;
    });
  }
  static void TearDownTestSuite() {
    for (auto** services : {&preloaded_, &imported_}) {
      (*services)->Finish();
      delete *services;
      *services = nullptr;
    }
  }
  SandboxService* Service() {
    return (GetParam().preloaded ? preloaded_ : imported_)->Get(GetParam().mode);
  }
  exec::RunResult Run(const std::string& code) {
    return sandbox::testing::RunCode(Service(), "import matplotlib.pyplot as plt\n" + code);
  }
  // The figures' widths in order (the tests tell figures apart by their width in inches).
  static std::vector<int> Widths(const exec::RunResult& r) {
    std::vector<int> widths;
    for (const auto& image : r.images) {
      EXPECT_EQ(image.data.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
      widths.push_back(image.width);
    }
    return widths;
  }
  static sandbox::testing::SharedServices* preloaded_;
  static sandbox::testing::SharedServices* imported_;
};

sandbox::testing::SharedServices* FigureTest::preloaded_ = nullptr;
sandbox::testing::SharedServices* FigureTest::imported_ = nullptr;

TEST_P(FigureTest, AFigureNeverShownComesBack) {
  auto loaded =
      sandbox::testing::RunCode(Service(), "import sys\n'matplotlib.pyplot' in sys.modules");
  ASSERT_TRUE(loaded.value.has_value()) << sandbox::testing::Describe(loaded);
  EXPECT_EQ(*loaded.value, GetParam().preloaded ? "True" : "False");
  auto r = Run("plt.plot([3, 1, 2])");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_THAT(Widths(r), ::testing::ElementsAre(640));
  r = Run("plt.plot([3, 1, 2])\nx = 1\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_THAT(Widths(r), ::testing::ElementsAre(640));
  // Nothing of the earlier runs comes back with the next one.
  r = Run("x = 2");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_TRUE(r.images.empty());
}

TEST_P(FigureTest, ShownFiguresThenOpenOnesEachOnce) {
  auto r =
      Run("plt.figure(figsize=(2, 1)); plt.plot([1]); plt.show()\n"
          "plt.figure(figsize=(3, 1)); plt.plot([2])\n"
          "plt.figure(figsize=(4, 1)); plt.plot([3])\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_THAT(Widths(r), ::testing::ElementsAre(200, 300, 400));
}

TEST_P(FigureTest, ClosedFiguresDoNotComeBack) {
  auto r =
      Run("plt.plot([1]); plt.close()\n"
          "plt.figure(figsize=(2, 1)); plt.figure(figsize=(3, 1)); plt.close(1)\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_THAT(Widths(r), ::testing::ElementsAre(300));
}

TEST_P(FigureTest, OpenFiguresComeBackAfterAnException) {
  auto r = Run("plt.figure(figsize=(2, 1)); plt.plot([1])\nraise ValueError('after the plot')\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kError) << sandbox::testing::Describe(r);
  ASSERT_TRUE(r.traceback.has_value());
  EXPECT_EQ(r.traceback->type, "ValueError");
  EXPECT_THAT(Widths(r), ::testing::ElementsAre(200));
}

TEST_P(FigureTest, MaxFiguresBoundsOpenFigures) {
  const int max_figures = config::OutputOptions{}.max_figures;
  auto r = Run("plt.figure(figsize=(1, 1)); plt.show()\nfor _ in range(" +
               std::to_string(max_figures + 3) + "):\n    plt.figure(figsize=(1, 1))\n");
  EXPECT_EQ(r.verdict, exec::Verdict::kOk) << sandbox::testing::Describe(r);
  EXPECT_EQ(r.images.size(), static_cast<size_t>(max_figures));
}

INSTANTIATE_TEST_SUITE_P(BothModes, FigureTest,
                         ::testing::Values(FigureParam{config::PoolMode::kRecycle, true},
                                           FigureParam{config::PoolMode::kRecycle, false},
                                           FigureParam{config::PoolMode::kFresh, true},
                                           FigureParam{config::PoolMode::kFresh, false}),
                         [](const ::testing::TestParamInfo<FigureParam>& figure) {
                           return std::string(config::PoolModeName(figure.param.mode)) +
                                  (figure.param.preloaded ? "_preloaded" : "_imported");
                         });

}  // namespace
}  // namespace sandbox::service
