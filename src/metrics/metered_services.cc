#include "sandbox/metrics/metered_services.h"

#include <chrono>

namespace sandbox::metrics {
namespace {

std::chrono::microseconds Since(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               begin);
}

}  // namespace

Result<exec::RunResult> MeteredRuns::Run(const exec::RunRequest& request,
                                         exec::RunObserver& observer,
                                         const exec::CancelToken& cancel) {
  const auto begin = std::chrono::steady_clock::now();
  auto result = inner_.Run(request, observer, cancel);
  if (!result.ok()) {
    metrics_.RecordRunError(RunKind::kOneShot, result.error().code());
    return result;
  }
  auto mode = modes_.find(result->pool);
  metrics_.RecordRun(RunKind::kOneShot, result->pool,
                     mode == modes_.end() ? std::string_view("unknown") : mode->second, *result,
                     Since(begin));
  return result;
}

Result<exec::RunResult> MeteredSessions::Run(const std::string& principal,
                                             const std::string& session_id,
                                             const exec::RunRequest& request,
                                             exec::RunObserver& observer,
                                             const exec::CancelToken& cancel) {
  const auto begin = std::chrono::steady_clock::now();
  auto result = inner().Run(principal, session_id, request, observer, cancel);
  if (!result.ok()) {
    metrics_.RecordRunError(RunKind::kSession, result.error().code());
    return result;
  }
  metrics_.RecordRun(RunKind::kSession, result->pool + "/sessions", "fresh", *result, Since(begin));
  return result;
}

}  // namespace sandbox::metrics
