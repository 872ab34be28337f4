#include "sandbox/http/sse_channel.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "sandbox/core/human_bytes.h"

namespace sandbox::http {

namespace {

std::string DefaultLastEvent(const std::string& reason) {
  return FormatSseEvent("error", nlohmann::json{{"error", reason}}.dump(
                                     -1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

SseChannel::SseChannel(SseChannelLimits limits, LastEvent last_event)
    : limits_(limits), last_event_(last_event ? std::move(last_event) : DefaultLastEvent) {
  if (limits_.budget != nullptr) held_ = limits_.budget->TryReserve(0);  // zero always fits
}

bool SseChannel::Push(const std::string& event) {
  std::function<void()> on_drop;
  bool dropped = false;
  {
    std::lock_guard lock(mu_);
    if (abandoned_ || closed_) return false;
    // One event beyond the bound is let in, so that a result larger than the bound still
    // reaches a reader that keeps up; a reader that left the bound's worth unread has not.
    std::string reason;
    if (!queued_.empty() && queued_.size() >= limits_.max_queued_bytes) {
      reason = "the client fell behind: " + HumanBytes(static_cast<std::int64_t>(queued_.size())) +
               " of events waited unread on this stream, the most the server queues for one "
               "reader (memory.stream_queue_bytes = " +
               std::to_string(limits_.max_queued_bytes) +
               "); the stream ends here and the events it was owed are dropped";
    } else if (held_ && !held_->TryGrow(static_cast<std::int64_t>(event.size()))) {
      reason =
          "the server cannot hold this stream's next event: " +
          limits_.budget->RefusalMessage(static_cast<std::int64_t>(event.size()), "the event") +
          "; the stream ends here";
    }
    if (reason.empty()) {
      queued_ += event;
    } else {
      // What the reader was owed is not kept: only the last event waits for it.
      if (held_) held_->Shrink(static_cast<std::int64_t>(queued_.size()));
      std::string().swap(queued_);
      queued_ = last_event_(reason);
      closed_ = true;
      overflowed_ = true;
      dropped = true;
      on_drop.swap(on_abandon_);
    }
  }
  cv_.notify_all();
  if (!dropped) return true;
  if (on_drop) on_drop();  // outside the lock: it cancels the run or ends the session behind
  return false;
}

void SseChannel::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void SseChannel::Abandon() {
  std::function<void()> callback;
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    abandoned_ = true;
    std::string().swap(queued_);
    writing_ = 0;
    if (held_) held_->Release();
    callback.swap(on_abandon_);
  }
  cv_.notify_all();
  if (callback) callback();
}

bool SseChannel::abandoned() const {
  std::lock_guard lock(mu_);
  return abandoned_;
}

bool SseChannel::accepting() const {
  std::lock_guard lock(mu_);
  return !closed_ && !abandoned_;
}

bool SseChannel::overflowed() const {
  std::lock_guard lock(mu_);
  return overflowed_;
}

std::size_t SseChannel::held_bytes() const {
  std::lock_guard lock(mu_);
  return held_ ? static_cast<std::size_t>(held_->bytes()) : queued_.size() + writing_;
}

void SseChannel::OnAbandon(std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    if (!abandoned_) {
      on_abandon_ = std::move(callback);
      return;
    }
  }
  callback();
}

SseChannel::Next SseChannel::Take(std::string& out, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  // The writer is back: what it took last has been written.
  if (held_) held_->Shrink(static_cast<std::int64_t>(writing_));
  writing_ = 0;
  cv_.wait_for(lock, wait, [&] { return abandoned_ || closed_ || !queued_.empty(); });
  if (abandoned_) return Next::kAbandoned;
  if (!queued_.empty()) {
    out.clear();
    out.swap(queued_);
    writing_ = out.size();
    return Next::kData;
  }
  return closed_ ? Next::kClosed : Next::kIdle;
}

std::string FormatSseEvent(std::string_view event, std::string_view data) {
  std::string out = "event: ";
  out += event;
  out += '\n';
  while (true) {
    auto newline = data.find('\n');
    out += "data: ";
    out += data.substr(0, newline);
    out += '\n';
    if (newline == std::string_view::npos) break;
    data.remove_prefix(newline + 1);
  }
  out += '\n';
  return out;
}

void ServeSse(httplib::Response& res, const std::shared_ptr<SseChannel>& channel,
              SseOptions options, std::shared_ptr<const void> hold) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto last_write =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  // Exactly "text/event-stream": with a charset parameter httplib would compress the stream.
  res.set_chunked_content_provider(
      "text/event-stream",
      [channel, options, last_write, hold = std::move(hold)](std::size_t /*offset*/,
                                                             httplib::DataSink& sink) {
        std::string data;
        switch (channel->Take(data, options.poll)) {
          case SseChannel::Next::kData:
            *last_write = std::chrono::steady_clock::now();
            return sink.write(data.data(), data.size());
          case SseChannel::Next::kClosed:
            sink.done();
            return true;
          case SseChannel::Next::kAbandoned:
            return false;
          case SseChannel::Next::kIdle:
            break;
        }
        if (!sink.is_writable()) return false;  // the peer closed the connection
        if (std::chrono::steady_clock::now() - *last_write >= options.keepalive) {
          static constexpr std::string_view kKeepAlive = ": keepalive\n\n";
          *last_write = std::chrono::steady_clock::now();
          return sink.write(kKeepAlive.data(), kKeepAlive.size());
        }
        return true;
      },
      [channel](bool success) {
        // On success the channel was closed and drained; otherwise the peer is gone.
        if (!success) channel->Abandon();
      });
}

}  // namespace sandbox::http
