// ApiError: a refusal of the plain HTTP API (/eval, /v1/execute) before or instead of a run: the
// HTTP status and a message naming what is wrong, and the request field at fault when there is
// one. Also the mapping of an engine refusal (exec::ExecutionService::Run's Error) to one.
// Thread-safety: value types and stateless functions; safe from any thread.
#pragma once

#include <string>

#include "sandbox/core/error.h"

namespace sandbox::api {

struct ApiError {
  int status = 400;
  std::string message;    // says what is wrong, e.g. "timeout_s: expected a number"
  std::string field;      // the request field at fault ("files[0].path"), "" when none
  int retry_after_s = 0;  // > 0: sent as Retry-After (503 when the pool is busy)
  std::string title;      // /eval only: Snekbox's error title ("Request data failed validation")
};

// The engine's refusals: kInvalidArgument -> 400 (the field taken from the message, such as
// "files[1].path: ..." or "unknown pool ..."), kBusy -> 503 with Retry-After, kUnavailable and
// kCancelled -> 503, anything else -> 500.
ApiError FromEngineError(const Error& error, int retry_after_s);

// The SessionService's refusals: kInvalidArgument -> 400 (field from the message), kNotFound ->
// 404 (unknown, expired or another principal's session, or a missing file), kLimit ->
// `limit_status` (429 for the session count limits of create, 413 for file sizes), kBusy -> 503
// with Retry-After (the session is running another call, or no container was free),
// kConflict -> 409, kUnavailable and kCancelled -> 503, anything else -> 500.
ApiError FromSessionError(const Error& error, int retry_after_s, int limit_status);

// The leading field name of an engine message ("timeout_s: must be ..." -> "timeout_s",
// "unknown pool \"x\"" -> "pool"); "" when it names none.
std::string FieldOfMessage(const std::string& message);

}  // namespace sandbox::api
