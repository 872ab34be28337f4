// SseChannel: a queue of Server-Sent Events between the thread that produces them (a running
// tools/call, a legacy session's dispatcher) and the httplib worker that writes them to the
// socket, plus ServeSse, which makes an httplib response stream a channel.
//
// The writer wakes at least every `poll` to notice a vanished peer (sink.is_writable()) and
// writes a ": keepalive" comment after `keepalive` of silence, so proxies and clients keep long
// streams open. No "id:" fields are sent: the server keeps no replay buffer, and the TypeScript
// client only tries to resume streams whose events carried ids.
//
// Bounded (issue 34, docs/memory-budget.md): a push that finds `max_queued_bytes` still waiting
// for the reader (it fell behind, or stopped reading) drops the reader: the queued events are
// freed at once, one last event saying why is queued in their place, the stream ends after it,
// later pushes fail and the abandon callback runs (the run behind the stream is cancelled, a
// legacy session ended). So a channel holds at most max_queued_bytes plus one event queued, and
// the event being written. Those bytes also count against the server-wide in-flight budget
// (memory.inflight_bytes); an event that does not fit there drops the reader the same way.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/byte_budget.h"

namespace httplib {
struct Response;
}

namespace sandbox::http {

// The bound of one channel; the server's configuration (memory.stream_queue_bytes) sets it.
struct SseChannelLimits {
  // A push that finds this many bytes still queued for the reader drops the reader.
  std::size_t max_queued_bytes = std::size_t{4} << 20;
  // The server-wide budget queued (and being written) bytes count against; null: none.
  ByteBudget* budget = nullptr;
};

class SseChannel {
 public:
  enum class Next { kData, kIdle, kClosed, kAbandoned };
  // The last event of a stream whose reader was dropped, from the reason (a sentence). The
  // default is an `error` event with {"error": reason}.
  using LastEvent = std::function<std::string(const std::string& reason)>;

  explicit SseChannel(SseChannelLimits limits = {}, LastEvent last_event = nullptr);

  // Queues a formatted event. False when the peer is gone (nothing will read it), or when this
  // push dropped a reader that fell behind.
  bool Push(const std::string& event);
  // The stream ends once the queued events are written.
  void Close();
  // The peer went away: queued events are dropped, later pushes fail, and the abandon callback
  // runs once (on this thread). Called by ServeSse; tests may call it.
  void Abandon();
  bool abandoned() const;
  // Pushes may still be queued (neither closed nor abandoned): a producer about to build a
  // large last event asks first.
  bool accepting() const;
  // The reader fell behind and was dropped (its queue over its bound or the budget's).
  bool overflowed() const;
  // Bytes queued and being written now, as counted against the budget.
  std::size_t held_bytes() const;
  // Runs when the channel is abandoned (at once if it already is).
  void OnAbandon(std::function<void()> callback);

  // Writer side: waits up to `wait` and returns every queued event concatenated in `out`.
  Next Take(std::string& out, std::chrono::milliseconds wait);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const SseChannelLimits limits_;
  const LastEvent last_event_;
  std::optional<ByteBudget::Reservation> held_;  // against limits_.budget
  std::string queued_;
  std::size_t writing_ = 0;  // bytes the writer took last, counted until its next Take
  bool closed_ = false;
  bool abandoned_ = false;
  bool overflowed_ = false;
  std::function<void()> on_abandon_;
};

// "event: <event>\ndata: <data>\n\n"; a data with newlines is split into several data lines.
std::string FormatSseEvent(std::string_view event, std::string_view data);

// The writer's pacing (the bound of each channel is SseChannelLimits).
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
