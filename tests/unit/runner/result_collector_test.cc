// The result collector: the server's own checks of what a run reports (output within the run's
// bound, figures and files within the pool's output bounds, file paths), what passes relayed
// to the observer as it arrives, and the RunResult at `done` or at a failure.
#include "runner/result_collector.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandbox::runner {
namespace {

class Recorder : public exec::RunObserver {
 public:
  void OnOutput(exec::Stream stream, std::string_view bytes) override {
    (stream == exec::Stream::kStdout ? out : err).append(bytes);
  }
  void OnImage(const exec::Image& image) override { images.push_back(image); }
  void OnFile(const exec::OutputFile& file) override { files.push_back(file); }

  std::string out;
  std::string err;
  std::vector<exec::Image> images;
  std::vector<exec::OutputFile> files;
};

class ResultCollectorTest : public ::testing::Test {
 protected:
  ResultCollectorTest() {
    output_.max_figures = 2;
    output_.max_figure_px = 100;
    output_.max_figure_bytes = 8;
    output_.max_figures_bytes = 12;
    output_.max_files = 2;
    output_.max_files_bytes = 10;
    limits_.output_bytes = 10;
  }

  ResultCollector Collector() {
    exec::RunResult where;
    where.pool = "default";
    return ResultCollector(output_, limits_, observer_, std::move(where),
                           [this](const std::string& why) { dropped_.push_back(why); });
  }

  static ImageEvent Image(int width, const std::string& data_b64) {
    return ImageEvent{"run-1", width, width, data_b64};
  }
  static FileEvent Piece(const std::string& path, std::int64_t offset, bool last,
                         const std::string& data_b64) {
    return FileEvent{"run-1", path, offset, last, "text/plain", data_b64};
  }

  config::OutputOptions output_;
  RunLimits limits_;
  Recorder observer_;
  std::vector<std::string> dropped_;
};

TEST_F(ResultCollectorTest, OutputIsRelayedAndHeldWithinTheRunsBound) {
  auto collector = Collector();
  collector.OnOutput(exec::Stream::kStdout, "hello ");
  collector.OnOutput(exec::Stream::kStderr, std::string(300, 'e'));
  collector.OnOutput(exec::Stream::kStdout, "more");
  const auto result = collector.Finish(DoneEvent{}, std::chrono::milliseconds(5));
  EXPECT_EQ(observer_.out, "hello more");  // the observer sees it all, as it comes
  // The result holds output_bytes plus the harness's marker's room (256), then it is cut.
  EXPECT_EQ(result.stdout_text, "hello ");
  EXPECT_EQ(result.stdout_text.size() + result.stderr_text.size(), 10u + 256u);
  EXPECT_TRUE(result.output_truncated);
  EXPECT_EQ(result.pool, "default");
}

TEST_F(ResultCollectorTest, FiguresOutOfBoundsAreDroppedAndMarked) {
  auto collector = Collector();
  collector.OnImage(Image(10, "UE5H"));          // 3 bytes: kept
  collector.OnImage(Image(101, "UE5H"));         // too wide: dropped and told
  collector.OnImage(Image(10, "UE5HUE5HUE5H"));  // 9 bytes, over one figure's 8: dropped
  collector.OnImage(Image(10, "UE5H"));          // kept: 6 bytes in all
  collector.OnImage(Image(10, "UE5H"));          // a third figure: over max_figures
  const auto result = collector.Finish(DoneEvent{}, std::chrono::milliseconds(5));
  EXPECT_EQ(result.images.size(), 2u);
  EXPECT_EQ(observer_.images.size(), 2u);
  EXPECT_EQ(result.images[0].data, "PNG");
  EXPECT_EQ(result.images[0].mime_type, "image/png");
  EXPECT_TRUE(result.images_truncated);
  EXPECT_EQ(dropped_,
            (std::vector<std::string>{"an image out of bounds", "an image out of bounds"}));
}

TEST_F(ResultCollectorTest, FilesAreAssembledFromTheirPiecesInOrder) {
  auto collector = Collector();
  collector.OnFile(Piece("a.txt", 0, false, "aGk="));  // "hi"
  collector.OnFile(Piece("a.txt", 2, true, "aGk="));
  EXPECT_EQ(observer_.files.size(), 1u);  // once its last piece arrived
  collector.OnFile(Piece("b.txt", 0, false, "aGk="));
  collector.OnFile(Piece("b.txt", 5, true, "aGk="));  // a gap: dropped
  const auto result = collector.Finish(DoneEvent{}, std::chrono::milliseconds(5));
  ASSERT_EQ(result.files.size(), 1u);
  EXPECT_EQ(result.files[0].path, "a.txt");
  EXPECT_EQ(result.files[0].data, "hihi");
  EXPECT_EQ(result.files[0].size, 4);
  EXPECT_TRUE(result.files_truncated);
  EXPECT_TRUE(dropped_.empty());  // not a drop the log line names
}

TEST_F(ResultCollectorTest, ABadPathOrTooManyBytesDropTheFile) {
  auto collector = Collector();
  collector.OnFile(Piece("../x", 0, true, "aGk="));
  EXPECT_EQ(dropped_, (std::vector<std::string>{"a file whose path is not normalized (empty, "
                                                "'.' or '..' component)"}));
  collector.OnFile(Piece("big", 0, true, "aGVsbG8gd29ybGQh"));  // 12 bytes, over 10
  collector.OnFile(Piece("open", 0, false, "aGk="));            // never ends
  const auto result = collector.Finish(DoneEvent{}, std::chrono::milliseconds(5));
  EXPECT_TRUE(result.files.empty());
  EXPECT_TRUE(result.files_truncated);
}

TEST_F(ResultCollectorTest, DoneGivesTheHarnessesVerdictWithinTheServersBounds) {
  auto collector = Collector();
  DoneEvent done;
  done.verdict = "memory";
  done.exit_code = 1;
  done.signal = 9;
  done.value = std::string(100000, 'v');
  done.traceback = nlohmann::json{{"type", "MemoryError"}, {"message", ""}, {"frames", {}}};
  done.files_truncated = true;
  done.detail = "out of memory";
  done.session_reset = true;
  const auto result = collector.Finish(done, std::chrono::milliseconds(5));
  EXPECT_EQ(result.verdict, exec::Verdict::kMemory);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.signal, 9);
  EXPECT_EQ(result.duration_ms, 5);  // none given: the server's measure
  EXPECT_LT(result.value->size(), 100000u);
  EXPECT_EQ(result.traceback->type, "MemoryError");
  EXPECT_TRUE(result.files_truncated);
  EXPECT_FALSE(result.images_truncated);
  EXPECT_TRUE(result.session_reset);
  EXPECT_EQ(result.detail, "out of memory");
}

TEST_F(ResultCollectorTest, AnUnknownVerdictIsInternalAndNoExitIsMinusOne) {
  auto collector = Collector();
  DoneEvent done;
  done.verdict = "bogus";
  done.duration_ms = 7;
  const auto result = collector.Finish(done, std::chrono::milliseconds(5));
  EXPECT_EQ(result.verdict, exec::Verdict::kInternal);
  EXPECT_EQ(result.exit_code, -1);
  EXPECT_EQ(result.duration_ms, 7);
}

TEST_F(ResultCollectorTest, AFailureKeepsWhatTheRunSentSoFar) {
  auto collector = Collector();
  collector.OnOutput(exec::Stream::kStdout, "partial");
  const auto result =
      collector.Fail(exec::Verdict::kCancelled, "cancelled; the sandbox was killed");
  EXPECT_EQ(result.verdict, exec::Verdict::kCancelled);
  EXPECT_EQ(result.detail, "cancelled; the sandbox was killed");
  EXPECT_EQ(result.stdout_text, "partial");
  EXPECT_EQ(result.pool, "default");
}

}  // namespace
}  // namespace sandbox::runner
