// The execution and session services with every run recorded in Metrics: verdicts, durations,
// output bytes, images and files of runs that reached a sandbox, error codes of those that did
// not. Everything else passes through.
// Thread-safety: every method from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/metrics/metrics.h"

namespace sandbox::metrics {

// Each configured pool's mode ("recycle" or "fresh") by its name, for the mode label.
using PoolModes = std::map<std::string, std::string>;

class MeteredRuns final : public exec::ExecutionService {
 public:
  MeteredRuns(exec::ExecutionService& inner, Metrics& metrics, PoolModes modes)
      : inner_(inner), metrics_(metrics), modes_(std::move(modes)) {}
  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;
  Result<exec::ServiceInfo> Info() override { return inner_.Info(); }
  Result<std::string> PoolForExecutable(const std::string& path) override {
    return inner_.PoolForExecutable(path);
  }

 private:
  exec::ExecutionService& inner_;
  Metrics& metrics_;
  const PoolModes modes_;
};

// Session cells count under the session pool ("<pool>/sessions", mode fresh), as its gauges do.
class MeteredSessions final : public exec::ForwardingSessionService {
 public:
  MeteredSessions(exec::SessionService& inner, Metrics& metrics)
      : ForwardingSessionService(inner), metrics_(metrics) {}
  Result<exec::RunResult> Run(const std::string& principal, const std::string& session_id,
                              const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;

 private:
  Metrics& metrics_;
};

}  // namespace sandbox::metrics
