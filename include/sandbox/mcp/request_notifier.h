// RequestNotifier: sends the notifications that belong to one tools/call request: progress
// (only when the request carried _meta.progressToken) and log messages (only when the client set
// a logging level, and only at or above it). None leaves once the request is cancelled: the
// client has forgotten its progress token, and a run being torn down (which can take seconds on a
// loaded engine) would otherwise keep sending heartbeats for it.
// Thread-safety: every method may be called from any thread; messages leave in call order.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/exec/cancel_token.h"
#include "sandbox/mcp/log_level.h"
#include "sandbox/mcp/outbound.h"

namespace sandbox::mcp {

class RequestNotifier {
 public:
  // `progress_token`: null when the request asked for no progress. `log_threshold`: the
  // session's level, unset when the client never called logging/setLevel. `cancel`: the
  // request's token (nullptr: never cancelled); it must outlive the notifier.
  RequestNotifier(Outbound& out, nlohmann::json progress_token,
                  std::optional<LogLevel> log_threshold, const exec::CancelToken* cancel = nullptr);

  bool wants_progress() const { return !progress_token_.is_null(); }
  bool WantsLog(LogLevel level) const { return log_threshold_ && level >= *log_threshold_; }

  // notifications/progress with the next value: one more than the last one sent, so progress is
  // strictly increasing however calls interleave. No-op without a progress token.
  void Progress(const std::string& message);
  // An explicit value; raised to last + 1 when it would not increase.
  void ProgressValue(double progress, std::optional<double> total, const std::string& message);
  // notifications/message when the level passes the client's threshold.
  void Log(LogLevel level, const std::string& logger, nlohmann::json data);
  // Holds `reservation` until the request's response has been sent (Outbound::Hold).
  void Hold(ByteBudget::Reservation reservation) { out_.Hold(std::move(reservation)); }

 private:
  bool cancelled() const { return cancel_ != nullptr && cancel_->IsCancelled(); }

  Outbound& out_;
  const nlohmann::json progress_token_;
  const std::optional<LogLevel> log_threshold_;
  const exec::CancelToken* const cancel_;
  std::mutex mu_;
  std::optional<double> last_progress_;
};

}  // namespace sandbox::mcp
