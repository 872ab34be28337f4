#include "event_sink.h"

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace sandbox::egress {

EventSink::EventSink(Writer write, EventSinkOptions options)
    : write_(std::move(write)), options_(options), writer_([this] { WriterLoop(); }) {}

EventSink::~EventSink() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

void EventSink::Emit(const nlohmann::json& event) {
  // Invalid UTF-8 (a DNS name, an SNI) is replaced rather than thrown about.
  std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  {
    const std::lock_guard lock(mutex_);
    if (queue_.size() >= options_.max_queued) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(line));
  }
  wake_.notify_one();
}

std::uint64_t EventSink::dropped() const {
  const std::lock_guard lock(mutex_);
  return dropped_;
}

void EventSink::Flush() {
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

void EventSink::WriterLoop() {
  bool open = true;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, and everything written
    std::string line = std::move(queue_.front());
    queue_.pop_front();
    std::string report;
    if (queue_.empty() && dropped_ != dropped_reported_) {
      // Reported once the queue has room again, so the report itself is not dropped.
      report =
          nlohmann::json{{"ev", "dropped"}, {"count", dropped_ - dropped_reported_}}.dump() + "\n";
      dropped_reported_ = dropped_;
    }
    writing_ = true;
    lock.unlock();
    if (open) open = write_(line);
    if (open && !report.empty()) open = write_(report);
    lock.lock();
    writing_ = false;
    if (queue_.empty()) drained_.notify_all();
  }
  drained_.notify_all();
}

bool WriteLineToFd(int fd, std::string_view line) {
  while (!line.empty()) {
    const ssize_t n = ::write(fd, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    line.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace sandbox::egress
