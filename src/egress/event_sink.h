// The proxy's events (audit lines, control answers, DNS queries) as JSON lines to the server,
// which reads the proxy container's attached stdout. Emitting never blocks the proxy: lines
// wait in a bounded queue for a writer thread, and what does not fit is dropped and counted
// (a later {"ev":"dropped","count":N} line says how many).
// Thread-safety: Emit may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>

namespace sandbox::egress {

struct EventSinkOptions {
  std::size_t max_queued = 4096;  // lines waiting for the writer; more are dropped
};

class EventSink {
 public:
  // `write` gets one line at a time (with its "\n") on the writer thread; false: the reader
  // is gone, and later lines are discarded.
  using Writer = std::function<bool(std::string_view line)>;

  explicit EventSink(Writer write, EventSinkOptions options = {});
  // Writes what is queued, then stops the writer.
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  void Emit(const nlohmann::json& event);
  std::uint64_t dropped() const;
  // Waits until every line queued so far is written (tests, shutdown).
  void Flush();

 private:
  void WriterLoop();

  Writer write_;
  EventSinkOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<std::string> queue_;
  std::uint64_t dropped_ = 0;
  std::uint64_t dropped_reported_ = 0;
  bool writing_ = false;
  bool stopping_ = false;
  std::thread writer_;
};

// Writes a line to a file descriptor in full (stdout), retrying short writes.
bool WriteLineToFd(int fd, std::string_view line);

}  // namespace sandbox::egress
