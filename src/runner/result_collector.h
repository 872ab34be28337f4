// ResultCollector: one run's result from its events. The server checks every claim of the run
// again, whatever the harness checked (defence in depth: the run's code shares a process with
// the harness code that writes the records, docs/harness-protocol.md "Trust"): the output
// within the run's bound, each figure and file against the pool's output bounds and each file's
// path; what fails a check is dropped and marked (images_truncated, files_truncated), never
// passed on. What passes goes to the observer as it arrives, and into the RunResult built at
// `done`.
//
// Thread-safety: none; one per run, on the run's thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "harness_protocol.h"
#include "sandbox/config/config.h"
#include "sandbox/exec/execution_service.h"

namespace sandbox::runner {

class ResultCollector {
 public:
  // Told why an event was dropped, for the run's log line (not every drop is told).
  using NoteDropped = std::function<void(const std::string& why)>;

  // `result` holds what the result says of where the run ran (pool, engine, sandbox).
  ResultCollector(const config::OutputOptions& output, const RunLimits& limits,
                  exec::RunObserver& observer, exec::RunResult result, NoteDropped note_dropped);

  void OnOutput(exec::Stream stream, std::string_view bytes);
  void OnImage(const ImageEvent& event);
  void OnFile(const FileEvent& event);
  // The result at the run's `done`; `elapsed` stands in for a duration the harness does not give.
  exec::RunResult Finish(const DoneEvent& done, std::chrono::milliseconds elapsed);
  // The result of a run that ended without a `done`: `verdict`, and `detail` saying why.
  exec::RunResult Fail(exec::Verdict verdict, const std::string& detail);

 private:
  const config::OutputOptions& output_;
  exec::RunObserver& observer_;
  exec::RunResult result_;
  NoteDropped note_dropped_;
  // The harness cuts output at the run's limit (plus its marker); the server holds no more
  // than that either, whatever the harness sends.
  std::size_t output_bound_;
  std::size_t image_bytes_ = 0;
  std::size_t file_bytes_ = 0;
  bool dropped_images_ = false;  // an image event failed the server's own checks
  bool dropped_files_ = false;   // a file event did
  // The returned file being assembled from its pieces; kept only once its last piece arrived.
  std::optional<exec::OutputFile> piece_file_;
};

}  // namespace sandbox::runner
