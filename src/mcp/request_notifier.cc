#include "sandbox/mcp/request_notifier.h"

#include <cmath>

#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
using jsonrpc::MakeNotification;

// Whole numbers go out as JSON integers (1, not 1.0).
json Number(double value) {
  if (std::floor(value) == value && std::fabs(value) < 9e15) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

}  // namespace

RequestNotifier::RequestNotifier(Outbound& out, nlohmann::json progress_token,
                                 std::optional<LogLevel> log_threshold,
                                 const exec::CancelToken* cancel)
    : out_(out),
      progress_token_(std::move(progress_token)),
      log_threshold_(log_threshold),
      cancel_(cancel) {}

void RequestNotifier::Progress(const std::string& message) {
  if (!wants_progress() || cancelled()) return;
  std::lock_guard lock(mu_);
  double next = last_progress_ ? *last_progress_ + 1 : 1;
  last_progress_ = next;
  json params = {{"progressToken", progress_token_}, {"progress", Number(next)}};
  if (!message.empty()) params["message"] = message;
  out_.Send(MakeNotification("notifications/progress", std::move(params)));
}

void RequestNotifier::ProgressValue(double progress, std::optional<double> total,
                                    const std::string& message) {
  if (!wants_progress() || cancelled()) return;
  std::lock_guard lock(mu_);
  if (last_progress_ && progress <= *last_progress_) progress = *last_progress_ + 1;
  last_progress_ = progress;
  json params = {{"progressToken", progress_token_}, {"progress", Number(progress)}};
  if (total) params["total"] = Number(*total);
  if (!message.empty()) params["message"] = message;
  out_.Send(MakeNotification("notifications/progress", std::move(params)));
}

void RequestNotifier::Log(LogLevel level, const std::string& logger, nlohmann::json data) {
  if (!WantsLog(level) || cancelled()) return;
  std::lock_guard lock(mu_);
  json params = {{"level", LogLevelName(level)}, {"data", std::move(data)}};
  if (!logger.empty()) params["logger"] = logger;
  out_.Send(MakeNotification("notifications/message", std::move(params)));
}

}  // namespace sandbox::mcp
