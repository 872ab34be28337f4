// SseChannel: a queue of Server-Sent Events between the thread that produces them (a running
// tools/call, a legacy session's dispatcher) and the httplib worker that writes them to the
// socket, plus ServeSse, which makes an httplib response stream a channel.
//
// The writer wakes at least every `poll` to notice a vanished peer (sink.is_writable()) and
// writes a ": keepalive" comment after `keepalive` of silence, so proxies and clients keep long
// streams open. No "id:" fields are sent: the server keeps no replay buffer, and the TypeScript
// client only tries to resume streams whose events carried ids.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace httplib {
struct Response;
}

namespace sandbox::http {

class SseChannel {
 public:
  enum class Next { kData, kIdle, kClosed, kAbandoned };

  // Queues a formatted event. False when the peer is gone (nothing will read it).
  bool Push(const std::string& event);
  // The stream ends once the queued events are written.
  void Close();
  // The peer went away: queued events are dropped, later pushes fail, and the abandon callback
  // runs once (on this thread). Called by ServeSse; tests may call it.
  void Abandon();
  bool abandoned() const;
  // Runs when the channel is abandoned (at once if it already is).
  void OnAbandon(std::function<void()> callback);

  // Writer side: waits up to `wait` and returns every queued event concatenated in `out`.
  Next Take(std::string& out, std::chrono::milliseconds wait);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string queued_;
  bool closed_ = false;
  bool abandoned_ = false;
  std::function<void()> on_abandon_;
};

// "event: <event>\ndata: <data>\n\n"; a data with newlines is split into several data lines.
std::string FormatSseEvent(std::string_view event, std::string_view data);

struct SseOptions {
  std::chrono::milliseconds keepalive{15000};
  std::chrono::milliseconds poll{1000};
};

// Sets the SSE headers (text/event-stream, Cache-Control: no-cache, X-Accel-Buffering: no) and
// a chunked content provider that drains `channel` until it is closed. When the connection
// fails or the peer goes away first, the channel is abandoned. `hold` (e.g. the stream's
// SlotLimiter slot) is kept until the response is destroyed.
void ServeSse(httplib::Response& res, const std::shared_ptr<SseChannel>& channel,
              SseOptions options, std::shared_ptr<const void> hold = nullptr);

}  // namespace sandbox::http
