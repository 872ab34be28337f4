#include "sandbox/api/api_error.h"

#include <algorithm>

namespace sandbox::api {

ApiError FromEngineError(const Error& error, int retry_after_s) {
  ApiError out;
  out.message = error.message();
  switch (error.code()) {
    case ErrorCode::kInvalidArgument:
      out.status = 400;
      out.field = FieldOfMessage(error.message());
      break;
    case ErrorCode::kBusy:
      out.status = 503;
      out.retry_after_s = retry_after_s;
      out.message = "all sandboxes are busy, try again shortly: " + error.message();
      break;
    case ErrorCode::kRateLimited:
      out.status = 429;
      out.retry_after_s = std::max(error.retry_after_s(), 1);
      out.message = "rate limited: " + error.message();
      break;
    case ErrorCode::kUnavailable:
      out.status = 503;
      out.message = "the sandbox engine is unavailable: " + error.message();
      break;
    case ErrorCode::kCancelled:
      out.status = 503;
      out.message = "cancelled: " + error.message();
      break;
    default:
      out.status = 500;
      out.message = "the sandbox failed: " + error.ToString();
      break;
  }
  return out;
}

ApiError FromSessionError(const Error& error, int retry_after_s, int limit_status) {
  ApiError out;
  out.message = error.message();
  switch (error.code()) {
    case ErrorCode::kNotFound:
      out.status = 404;
      break;
    case ErrorCode::kLimit:
      out.status = limit_status;
      break;
    case ErrorCode::kConflict:
      out.status = 409;
      break;
    case ErrorCode::kBusy:
      out.status = 503;
      out.retry_after_s = retry_after_s;
      out.message = "busy, try again shortly: " + error.message();
      break;
    default:
      return FromEngineError(error, retry_after_s);
  }
  return out;
}

std::string FieldOfMessage(const std::string& message) {
  if (message.rfind("unknown pool", 0) == 0) return "pool";
  const auto colon = message.find(':');
  if (colon == std::string::npos || colon == 0) return "";
  std::string head = message.substr(0, colon);
  for (char c : head) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                    c == '[' || c == ']';
    if (!ok) return "";
  }
  return head;
}

}  // namespace sandbox::api
