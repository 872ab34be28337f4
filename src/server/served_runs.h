// The runs and sessions every front end (MCP, the HTTP API) is given: the engine's, behind
// fair sharing between principals (per_principal.*), metrics and the audit log.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <optional>

#include "sandbox/config/config.h"
#include "sandbox/core/principal_quota.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/metrics/metered_services.h"
#include "sandbox/metrics/metrics.h"
#include "sandbox/service/audit_log.h"
#include "sandbox/service/fair_share.h"

namespace sandbox::server {

class ServedRuns {
 public:
  // `sessions` may be null (sessions disabled); the engine and `metrics` must outlive this.
  ServedRuns(const config::Config& config, exec::ExecutionService& engine,
             exec::SessionService* sessions, metrics::Metrics& metrics,
             const std::shared_ptr<spdlog::logger>& logger);
  ServedRuns(const ServedRuns&) = delete;
  ServedRuns& operator=(const ServedRuns&) = delete;

  exec::ExecutionService& runs() { return audited_runs_; }
  // Null while sessions are off.
  exec::SessionService* sessions() { return sessions_; }

 private:
  std::shared_ptr<spdlog::logger> audit_logger_;
  PrincipalQuota quota_;
  service::FairShareRuns fair_runs_;
  // Outside the fair share, so its refusals are counted too.
  metrics::MeteredRuns metered_runs_;
  // Outermost: one audit line per run, refusals included.
  service::AuditedRuns audited_runs_;
  std::optional<service::FairShareSessions> fair_sessions_;
  std::optional<metrics::MeteredSessions> metered_sessions_;
  std::optional<service::AuditedSessions> audited_sessions_;
  exec::SessionService* sessions_ = nullptr;
};

}  // namespace sandbox::server
