#include "sandbox/service/audit_log.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <variant>

#include "sandbox/core/log_context.h"
#include "sandbox/core/log_safe.h"

namespace sandbox::service {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLoggedCode = 4096;
constexpr std::size_t kMaxLoggedReason = 1024;

std::string Cut(const std::string& text, std::size_t max_bytes) {
  return text.size() > max_bytes ? text.substr(0, max_bytes) : text;
}

std::int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// The one call that writes an audit line: "run" and its fields (core/log_context.h).
void Write(spdlog::logger& audit, const LogFields& fields) {
  const ScopedLogFields scoped(fields);
  audit.info("run");
}

}  // namespace

LogFields AuditFields(const AuditOptions& options, const std::string& principal,
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
  // A pool named by the request may be any string (an unknown one is refused, and logged).
  LogFields fields = {{"principal", principal.empty() ? std::string("-") : principal},
                      {"kind", session_id.empty() ? "oneshot" : "session"},
                      {"pool", Cut(pool, kLogValueMaxBytes)},
                      {"mode", mode}};
  auto add = [&fields](const char* key, std::variant<std::string, std::int64_t> value) {
    fields.push_back({key, std::move(value)});
  };
  if (!result.ok()) {
    add("refused", std::string(ErrorCodeName(result.error().code())));
    add("total_ms", total_ms);
    add("session", SessionDigest(session_id));
    // Errors about a session name it for its owner; the log names it by its digest.
    add("reason", Cut(RedactSessionId(result.error().message(), session_id), kMaxLoggedReason));
  } else {
    const exec::RunResult& r = *result;
    const auto size = [](std::size_t n) { return static_cast<std::int64_t>(n); };
    add("verdict", std::string(exec::VerdictName(r.verdict)));
    add("exit_code", std::int64_t{r.exit_code});
    add("signal", r.signal ? std::variant<std::string, std::int64_t>(std::int64_t{*r.signal})
                           : std::variant<std::string, std::int64_t>(std::string("-")));
    add("code_ms", r.duration_ms);
    add("total_ms", total_ms);
    add("stdout_bytes", size(r.stdout_text.size()));
    add("stderr_bytes", size(r.stderr_text.size()));
    add("images", size(r.images.size()));
    add("files", size(r.files.size()));
    add("engine", r.engine.empty() ? std::string("-") : Cut(r.engine, kLogValueMaxBytes));
    add("sandbox", r.sandbox_id.empty() ? std::string("-") : r.sandbox_id);
    add("session", SessionDigest(session_id));
  }
  if (options.log_code) add("code", Cut(request.code, kMaxLoggedCode));
  return fields;
}

std::string AuditLine(const AuditOptions& options, const std::string& principal,
                      const std::string& session_id, const exec::RunRequest& request,
                      const Result<exec::RunResult>& result, std::int64_t total_ms) {
  return "run" +
         RenderLogFields(AuditFields(options, principal, session_id, request, result, total_ms));
}

Result<exec::RunResult> AuditedRuns::Run(const exec::RunRequest& request,
                                         exec::RunObserver& observer,
                                         const exec::CancelToken& cancel) {
  const auto start = Clock::now();
  auto result = inner_.Run(request, observer, cancel);
  Write(*audit_, AuditFields(options_, request.principal, "", request, result, MillisSince(start)));
  return result;
}

Result<exec::RunResult> AuditedSessions::Run(const std::string& principal,
                                             const std::string& session_id,
                                             const exec::RunRequest& request,
                                             exec::RunObserver& observer,
                                             const exec::CancelToken& cancel) {
  const auto start = Clock::now();
  auto result = inner().Run(principal, session_id, request, observer, cancel);
  Write(*audit_, AuditFields(options_, principal, session_id, request, result, MillisSince(start)));
  return result;
}

}  // namespace sandbox::service
