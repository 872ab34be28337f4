#include "sandbox/mcp/output_relay.h"

#include <algorithm>

#include "sandbox/core/utf8.h"

namespace sandbox::mcp {

OutputRelay::OutputRelay(RequestNotifier& notifier, RelayOptions options)
    : notifier_(notifier),
      options_(options),
      active_(notifier.wants_progress() || notifier.WantsLog(LogLevel::kWarning)) {
  if (active_) thread_ = std::thread([this] { Loop(); });
}

OutputRelay::~OutputRelay() { Finish(); }

void OutputRelay::OnOutput(exec::Stream stream, std::string_view bytes) {
  if (!active_ || bytes.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    // Only what can still go out live is kept: max_live_bytes, and one byte more so that the
    // sender sees the cut and says so. A flood past it costs nothing here.
    const std::size_t room =
        options_.max_live_bytes + 1 - std::min(accepted_, options_.max_live_bytes + 1);
    if (room == 0) return;
    if (bytes.size() > room) bytes = bytes.substr(0, room);
    accepted_ += bytes.size();
    if (pending_.empty()) first_pending_ = std::chrono::steady_clock::now();
    if (!pending_.empty() && pending_.back().stream == stream) {
      pending_.back().bytes.append(bytes);
    } else {
      pending_.push_back(Chunk{stream, std::string(bytes)});
    }
    pending_bytes_ += bytes.size();
  }
  cv_.notify_one();
}

void OutputRelay::Finish() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::vector<OutputRelay::Chunk> OutputRelay::TakePending(bool all) {
  std::vector<Chunk> out;
  out.swap(pending_);
  pending_bytes_ = 0;
  if (!all && !out.empty()) {
    // Keep an unfinished multi-byte character of the last chunk for the next flush.
    std::string& last = out.back().bytes;
    std::size_t complete = CompleteUtf8Prefix(last);
    if (complete < last.size()) {
      pending_.push_back(Chunk{out.back().stream, last.substr(complete)});
      pending_bytes_ = last.size() - complete;
      first_pending_ = std::chrono::steady_clock::now();
      last.resize(complete);
      if (last.empty()) out.pop_back();
    }
  }
  return out;
}

void OutputRelay::Send(const std::vector<Chunk>& chunks) {
  for (const Chunk& chunk : chunks) {
    if (sent_bytes_ >= options_.max_live_bytes) return;
    std::string_view bytes = chunk.bytes;
    std::size_t room = options_.max_live_bytes - sent_bytes_;
    bool cut = bytes.size() > room;
    if (cut) bytes = bytes.substr(0, room);
    sent_bytes_ += bytes.size();
    std::string text = RepairUtf8(bytes);
    if (cut) {
      text += "\n[live output stopped after " + std::to_string(options_.max_live_bytes) +
              " bytes; the result carries the full output]\n";
    }
    const bool is_stderr = chunk.stream == exec::Stream::kStderr;
    notifier_.Progress(is_stderr ? "[stderr] " + text : text);
    notifier_.Log(is_stderr ? LogLevel::kWarning : LogLevel::kInfo, is_stderr ? "stderr" : "stdout",
                  text);
  }
}

void OutputRelay::Loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  auto last_sent = Clock::now();
  while (!stop_) {
    if (pending_.empty()) {
      if (!notifier_.wants_progress()) {
        cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
        continue;
      }
      if (cv_.wait_until(lock, last_sent + options_.heartbeat,
                         [&] { return stop_ || !pending_.empty(); })) {
        continue;
      }
      auto elapsed =
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count();
      lock.unlock();
      notifier_.Progress("still running (" + std::to_string(elapsed) + " s)");
      lock.lock();
      last_sent = Clock::now();
      continue;
    }
    cv_.wait_until(lock, first_pending_ + options_.coalesce,
                   [&] { return stop_ || pending_bytes_ >= options_.flush_bytes; });
    if (stop_) break;
    std::vector<Chunk> chunks = TakePending(false);
    if (chunks.empty()) continue;  // only an unfinished character: wait for the rest
    lock.unlock();
    Send(chunks);
    lock.lock();
    last_sent = Clock::now();
  }
  std::vector<Chunk> rest = TakePending(true);
  lock.unlock();
  Send(rest);
}

}  // namespace sandbox::mcp
