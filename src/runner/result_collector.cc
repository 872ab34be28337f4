#include "result_collector.h"

#include <algorithm>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/runner/result_checks.h"

namespace sandbox::runner {
namespace {

// The final expression's repr: the harness bounds it by value_max_chars (characters, up to 4
// bytes each, plus its marker); the server's own bound on top.
constexpr std::size_t kMaxValueBytes =
    static_cast<std::size_t>(kResultLimits.value_max_chars) * 4 + 64;

}  // namespace

ResultCollector::ResultCollector(const config::OutputOptions& output, const RunLimits& limits,
                                 exec::RunObserver& observer, exec::RunResult result,
                                 NoteDropped note_dropped)
    : output_(output),
      observer_(observer),
      result_(std::move(result)),
      note_dropped_(std::move(note_dropped)),
      output_bound_(static_cast<std::size_t>(std::max<std::int64_t>(limits.output_bytes, 0)) +
                    256) {}

void ResultCollector::OnOutput(exec::Stream stream, std::string_view bytes) {
  observer_.OnOutput(stream, bytes);
  std::string& into = stream == exec::Stream::kStdout ? result_.stdout_text : result_.stderr_text;
  const std::size_t held = result_.stdout_text.size() + result_.stderr_text.size();
  const std::size_t room = held < output_bound_ ? output_bound_ - held : 0;
  if (bytes.size() > room) result_.output_truncated = true;
  into.append(bytes.substr(0, room));
}

void ResultCollector::OnImage(const ImageEvent& event) {
  if (std::cmp_greater_equal(result_.images.size(), output_.max_figures) || event.width <= 0 ||
      event.height <= 0 || event.width > output_.max_figure_px ||
      event.height > output_.max_figure_px) {
    dropped_images_ = true;
    note_dropped_("an image out of bounds");
    return;
  }
  auto data = Base64Decode(event.data_b64);
  if (!data.ok() || std::cmp_greater(data->size(), output_.max_figure_bytes) ||
      std::cmp_greater(image_bytes_ + data->size(), output_.max_figures_bytes)) {
    dropped_images_ = true;
    return;
  }
  image_bytes_ += data->size();
  exec::Image image;
  image.mime_type = "image/png";
  image.width = static_cast<int>(event.width);
  image.height = static_cast<int>(event.height);
  image.data = std::move(*data);
  observer_.OnImage(image);
  result_.images.push_back(std::move(image));
}

void ResultCollector::OnFile(const FileEvent& event) {
  if (auto bad = ResultPathError(event.path); !bad.empty()) {
    dropped_files_ = true;
    note_dropped_("a file whose path is " + bad);
    return;
  }
  auto data = Base64Decode(event.data_b64);
  if (event.offset && *event.offset == 0) {
    if (piece_file_) dropped_files_ = true;  // the previous one never ended
    piece_file_.reset();
    if (std::cmp_less(result_.files.size(), output_.max_files)) {
      piece_file_.emplace();
      piece_file_->path = event.path;
      piece_file_->mime_type = CheckedMimeType(event.mime_type);
    }
  }
  if (!data.ok() || !event.offset || !piece_file_ || piece_file_->path != event.path ||
      std::cmp_not_equal(piece_file_->data.size(), *event.offset) ||
      std::cmp_greater(file_bytes_ + data->size(), output_.max_files_bytes)) {
    dropped_files_ = true;
    piece_file_.reset();
    return;
  }
  file_bytes_ += data->size();
  piece_file_->data.append(*data);
  if (!event.last) return;
  exec::OutputFile file = std::move(*piece_file_);
  piece_file_.reset();
  file.size = static_cast<std::int64_t>(file.data.size());
  observer_.OnFile(file);
  result_.files.push_back(std::move(file));
}

exec::RunResult ResultCollector::Finish(const DoneEvent& done, std::chrono::milliseconds elapsed) {
  result_.session_reset = done.session_reset;
  result_.verdict = exec::ParseVerdict(done.verdict).value_or(exec::Verdict::kInternal);
  result_.exit_code = static_cast<int>(done.exit_code.value_or(-1));
  if (done.signal) result_.signal = static_cast<int>(*done.signal);
  result_.duration_ms = done.duration_ms.value_or(elapsed.count());
  if (done.value) result_.value = CutText(*done.value, kMaxValueBytes);
  if (done.traceback) result_.traceback = BoundedTraceback(*done.traceback);
  result_.output_truncated = result_.output_truncated || done.output_truncated;
  if (piece_file_) dropped_files_ = true;  // its last piece never came
  result_.files_truncated = done.files_truncated || dropped_files_;
  result_.images_truncated = done.images_truncated || dropped_images_;
  result_.detail = done.detail;
  return std::move(result_);
}

exec::RunResult ResultCollector::Fail(exec::Verdict verdict, const std::string& detail) {
  result_.verdict = verdict;
  result_.detail = detail;
  return std::move(result_);
}

}  // namespace sandbox::runner
