#include "sandbox/http/sse_channel.h"

#include <httplib.h>

namespace sandbox::http {

bool SseChannel::Push(const std::string& event) {
  {
    std::lock_guard lock(mu_);
    if (abandoned_ || closed_) return false;
    queued_ += event;
  }
  cv_.notify_all();
  return true;
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
    queued_.clear();
    callback.swap(on_abandon_);
  }
  cv_.notify_all();
  if (callback) callback();
}

bool SseChannel::abandoned() const {
  std::lock_guard lock(mu_);
  return abandoned_;
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
  cv_.wait_for(lock, wait, [&] { return abandoned_ || closed_ || !queued_.empty(); });
  if (abandoned_) return Next::kAbandoned;
  if (!queued_.empty()) {
    out.swap(queued_);
    queued_.clear();
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
