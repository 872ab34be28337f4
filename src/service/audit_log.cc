#include "sandbox/service/audit_log.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "sandbox/core/sha256.h"

namespace sandbox::service {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLoggedCode = 4096;

// Free text (an error's reason, the code) as a JSON string: quoted, escaped, invalid UTF-8
// replaced, so nothing in it can end the line or forge a field.
std::string Quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The first 16 hex digits of the id's SHA-256 (the session key its container's label holds):
// correlates a session's runs without logging the id itself.
std::string SessionDigest(const std::string& session_id) {
  return session_id.empty() ? std::string("-") : Sha256Hex(session_id).substr(0, 16);
}

std::int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

}  // namespace

std::string AuditLine(const AuditOptions& options, const std::string& principal,
                      const std::string& session_id, const exec::RunRequest& request,
                      const Result<exec::RunResult>& result, std::int64_t total_ms) {
  std::string pool = request.pool.empty() ? options.default_pool : request.pool;
  if (result.ok() && !result->pool.empty()) pool = result->pool;
  std::string mode = "-";
  if (session_id.empty()) {
    if (auto it = options.modes.find(pool); it != options.modes.end()) mode = it->second;
  } else {
    mode = "session";
  }
  std::string line = "run principal=" + (principal.empty() ? std::string("-") : principal) +
                     " kind=" + (session_id.empty() ? "oneshot" : "session") + " pool=" + pool +
                     " mode=" + mode;
  if (!result.ok()) {
    line += " refused=" + std::string(ErrorCodeName(result.error().code())) +
            " total_ms=" + std::to_string(total_ms) + " session=" + SessionDigest(session_id) +
            " reason=" + Quoted(result.error().message());
  } else {
    const exec::RunResult& r = *result;
    line += " verdict=" + std::string(exec::VerdictName(r.verdict)) +
            " exit_code=" + std::to_string(r.exit_code) +
            " signal=" + (r.signal ? std::to_string(*r.signal) : std::string("-")) +
            " code_ms=" + std::to_string(r.duration_ms) + " total_ms=" + std::to_string(total_ms) +
            " stdout_bytes=" + std::to_string(r.stdout_text.size()) +
            " stderr_bytes=" + std::to_string(r.stderr_text.size()) +
            " images=" + std::to_string(r.images.size()) +
            " files=" + std::to_string(r.files.size()) +
            " sandbox=" + (r.sandbox_id.empty() ? std::string("-") : r.sandbox_id) +
            " session=" + SessionDigest(session_id);
  }
  if (options.log_code) {
    line += " code=" + Quoted(request.code.size() > kMaxLoggedCode
                                  ? request.code.substr(0, kMaxLoggedCode)
                                  : request.code);
  }
  return line;
}

Result<exec::RunResult> AuditedRuns::Run(const exec::RunRequest& request,
                                         exec::RunObserver& observer,
                                         const exec::CancelToken& cancel) {
  const auto start = Clock::now();
  auto result = inner_.Run(request, observer, cancel);
  audit_->info(AuditLine(options_, request.principal, "", request, result, MillisSince(start)));
  return result;
}

Result<exec::RunResult> AuditedSessions::Run(const std::string& principal,
                                             const std::string& session_id,
                                             const exec::RunRequest& request,
                                             exec::RunObserver& observer,
                                             const exec::CancelToken& cancel) {
  const auto start = Clock::now();
  auto result = inner().Run(principal, session_id, request, observer, cancel);
  audit_->info(AuditLine(options_, principal, session_id, request, result, MillisSince(start)));
  return result;
}

}  // namespace sandbox::service
