// OutputRelay: the RunObserver that turns a run's live stdout/stderr into notifications of its
// tools/call request: notifications/progress (when the request has a progressToken) and
// notifications/message (when the client set a logging level; stdout at "info", stderr at
// "warning", logger "stdout"/"stderr").
//
// Chunks arriving within `coalesce` of the first pending one leave as one notification, so a
// print flood becomes a few messages a second, not thousands of SSE events. A multi-byte UTF-8
// character cut between chunks is kept back until it completes; invalid bytes become U+FFFD.
// While the run is silent, a progress notification still goes out every `heartbeat`, for
// clients that reset their request timeout on progress. After `max_live_bytes` the live copy
// stops (the result still carries the output up to the run's output limit), and output past it
// is not buffered either: the relay holds at most max_live_bytes + 1 bytes of a run's output.
//
// Thread-safety: the engine calls OnOutput from its relay thread; a private thread sends the
// notifications. Finish() (called by the owner after Run returns, also by the destructor) sends
// whatever is pending and stops that thread, so every notification precedes the response.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/exec/execution_service.h"
#include "sandbox/mcp/request_notifier.h"

namespace sandbox::mcp {

struct RelayOptions {
  std::chrono::milliseconds coalesce{200};     // window that merges output chunks
  std::chrono::milliseconds heartbeat{10000};  // most time between progress notifications
  std::size_t max_live_bytes = 1 << 20;        // live output sent per run at most
  std::size_t flush_bytes = 64 << 10;          // pending bytes that flush before the window ends
};

class OutputRelay final : public exec::RunObserver {
 public:
  OutputRelay(RequestNotifier& notifier, RelayOptions options);
  ~OutputRelay() override;
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  void OnOutput(exec::Stream stream, std::string_view bytes) override;
  void Finish();

  // True when the relay sends anything at all (a progress token or a logging level is set).
  bool active() const { return active_; }

 private:
  struct Chunk {
    exec::Stream stream;
    std::string bytes;
  };
  void Loop();
  // Takes what can be sent now; with `all`, also an incomplete UTF-8 tail. Needs mu_.
  std::vector<Chunk> TakePending(bool all);
  void Send(const std::vector<Chunk>& chunks);

  RequestNotifier& notifier_;
  const RelayOptions options_;
  const bool active_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Chunk> pending_;
  std::size_t pending_bytes_ = 0;
  std::size_t accepted_ = 0;  // bytes taken into pending_ since the start (at most max + 1)
  std::chrono::steady_clock::time_point first_pending_;
  std::size_t sent_bytes_ = 0;  // touched by the sending side only
  bool stop_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace sandbox::mcp
