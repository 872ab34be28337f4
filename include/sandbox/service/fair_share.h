// The execution and session services with a PrincipalQuota (core/principal_quota.h) in front of
// every run: one-shot runs count for RunRequest::principal, session cells for the call's
// principal. Runs of the principal "" (the server's own probes) are never limited.
// Thread-safety: every method from any thread.
#pragma once

#include <string>
#include <vector>

#include "sandbox/core/principal_quota.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"

namespace sandbox::service {

// ExecutionService with the quota in front; Info() and everything else pass through.
class FairShareRuns final : public exec::ExecutionService {
 public:
  FairShareRuns(exec::ExecutionService& inner, PrincipalQuota& quota)
      : inner_(inner), quota_(quota) {}
  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;
  Result<exec::ServiceInfo> Info() override { return inner_.Info(); }
  Result<std::string> PoolForExecutable(const std::string& path) override {
    return inner_.PoolForExecutable(path);
  }

 private:
  exec::ExecutionService& inner_;
  PrincipalQuota& quota_;
};

// SessionService with the quota in front of Run (a cell is a run); the rest passes through.
class FairShareSessions final : public exec::ForwardingSessionService {
 public:
  FairShareSessions(exec::SessionService& inner, PrincipalQuota& quota)
      : ForwardingSessionService(inner), quota_(quota) {}
  Result<exec::RunResult> Run(const std::string& principal, const std::string& session_id,
                              const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;

 private:
  PrincipalQuota& quota_;
};

}  // namespace sandbox::service
