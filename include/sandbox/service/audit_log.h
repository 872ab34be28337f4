// One audit line per run, for the operator: who ran what where, and how it ended. Logged at info
// by the logger "audit" (the server's sinks and format) as the message "run" with fields of its
// own (core/log_context.h): in text
//   run principal=alice kind=oneshot pool=default mode=recycle verdict=ok exit_code=0
//   code_ms=12 total_ms=31 stdout_bytes=2 stderr_bytes=0 images=0 files=0 sandbox=3f9c0a1b2c3d
//   session=-
// (a value other than a plain token quoted and escaped), with --log-format json one key each
// beside "msg":"run". A run refused before it reached a sandbox says `refused=<error code>` and
// the reason instead. Never the code (unless AuditOptions::log_code, for debugging), never a
// token; a session is named by SessionDigest (core/log_safe.h), also inside the reason.
// Thread-safety: every method from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sandbox/core/log_context.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"

namespace spdlog {
class logger;
}

namespace sandbox::service {

struct AuditOptions {
  std::map<std::string, std::string> modes;  // each pool's mode by name, for `mode=`
  std::string default_pool;                  // the pool of a request that names none
  bool log_code = false;                     // config log_run_code: the code, cut at 4 KiB
};

// The fields of one run's line. `session_id` is "" for a one-shot run.
LogFields AuditFields(const AuditOptions& options, const std::string& principal,
                      const std::string& session_id, const exec::RunRequest& request,
                      const Result<exec::RunResult>& result, std::int64_t total_ms);

// The line in the text format, after the prefix: "run" and the rendered fields (for tests).
std::string AuditLine(const AuditOptions& options, const std::string& principal,
                      const std::string& session_id, const exec::RunRequest& request,
                      const Result<exec::RunResult>& result, std::int64_t total_ms);

class AuditedRuns final : public exec::ExecutionService {
 public:
  AuditedRuns(exec::ExecutionService& inner, AuditOptions options,
              std::shared_ptr<spdlog::logger> audit)
      : inner_(inner), options_(std::move(options)), audit_(std::move(audit)) {}
  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;
  Result<exec::ServiceInfo> Info() override { return inner_.Info(); }
  Result<std::string> PoolForExecutable(const std::string& path) override {
    return inner_.PoolForExecutable(path);
  }

 private:
  exec::ExecutionService& inner_;
  const AuditOptions options_;
  std::shared_ptr<spdlog::logger> audit_;
};

class AuditedSessions final : public exec::ForwardingSessionService {
 public:
  AuditedSessions(exec::SessionService& inner, AuditOptions options,
                  std::shared_ptr<spdlog::logger> audit)
      : ForwardingSessionService(inner), options_(std::move(options)), audit_(std::move(audit)) {}
  Result<exec::RunResult> Run(const std::string& principal, const std::string& session_id,
                              const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;

 private:
  const AuditOptions options_;
  std::shared_ptr<spdlog::logger> audit_;
};

}  // namespace sandbox::service
