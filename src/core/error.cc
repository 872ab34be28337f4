#include "sandbox/core/error.h"

#include <cstring>
#include <string>

namespace sandbox {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kRateLimited:
      return "rate_limited";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kLimit:
      return "limit";
    case ErrorCode::kProtocol:
      return "protocol";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kEngine:
      return "engine";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string ErrnoText(int errnum) {
  char buffer[256];
  // GNU strerror_r: returns either buffer or a static string, never fails.
  return ::strerror_r(errnum, buffer, sizeof buffer);
}

std::string Error::ToString() const {
  std::string out(ErrorCodeName(code_));
  if (http_status_ != 0) out += " (HTTP " + std::to_string(http_status_) + ")";
  out += ": ";
  out += message_;
  return out;
}

Error Error::WithContext(std::string_view context) const {
  std::string message(context);
  message += ": ";
  message += message_;
  return Error(code_, std::move(message), http_status_);
}

}  // namespace sandbox
