#include "served_runs.h"

#include <string>
#include <utility>

namespace sandbox::server {
namespace {

metrics::PoolModes PoolModesOf(const config::Config& config) {
  metrics::PoolModes modes;
  for (const auto& pool : config.pools) modes[pool.name] = config::PoolModeName(pool.mode);
  return modes;
}

service::AuditOptions AuditOptionsOf(const config::Config& config) {
  return service::AuditOptions{PoolModesOf(config), config.default_pool, config.log_run_code};
}

}  // namespace

ServedRuns::ServedRuns(const config::Config& config, exec::ExecutionService& engine,
                       exec::SessionService* sessions, metrics::Metrics& metrics,
                       const std::shared_ptr<spdlog::logger>& logger)
    // The logger "audit": the server's sinks and format under its own name.
    : audit_logger_(logger->clone("audit")),
      quota_(FairShareOptions{config.per_principal.max_concurrent_runs,
                              config.per_principal.runs_per_minute}),
      fair_runs_(engine, quota_),
      metered_runs_(fair_runs_, metrics, PoolModesOf(config)),
      audited_runs_(metered_runs_, AuditOptionsOf(config), audit_logger_) {
  if (sessions == nullptr) return;
  sessions = &fair_sessions_.emplace(*sessions, quota_);
  sessions = &metered_sessions_.emplace(*sessions, metrics);
  sessions_ = &audited_sessions_.emplace(*sessions, AuditOptionsOf(config), audit_logger_);
}

}  // namespace sandbox::server
