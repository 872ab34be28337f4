// The project's one error type. Every fallible call returns Result<T> (result.h) carrying an
// Error on failure; exceptions thrown by libraries are caught at the edge and turned into one.
// Thread-safety: a value type; const methods may be called from any thread.
#pragma once

#include <string>
#include <string_view>

namespace sandbox {

enum class ErrorCode {
  kInvalidArgument,  // the caller's input is wrong (bad JSON, wrong type, out of range)
  kNotFound,         // a named thing does not exist (image, container, session)
  kConflict,         // the thing exists in a state that forbids the call
  kTimeout,          // a deadline passed
  kUnavailable,      // a dependency (the Docker engine) cannot be reached
  kBusy,             // no capacity now (pool exhausted); the caller may retry
  kRateLimited,      // the caller's principal is over its share (runs at once, runs per
                     // minute); retry after retry_after_s()
  kCancelled,        // the caller cancelled the operation
  kLimit,            // a configured limit was exceeded (size, count)
  kProtocol,         // a peer spoke a broken or unexpected protocol
  kUnsupported,      // a version or feature this build does not support
  kEngine,           // the Docker engine answered with an error status
  kInternal,         // a bug or an unexpected system failure
};

std::string_view ErrorCodeName(ErrorCode code);

// The text of an errno value, safe to call from any thread (std::strerror is not).
std::string ErrnoText(int errnum);

class Error {
 public:
  Error(ErrorCode code, std::string message, int http_status = 0)
      : code_(code), message_(std::move(message)), http_status_(http_status) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The HTTP status of the engine's answer when the error came from one, otherwise 0.
  int http_status() const { return http_status_; }

  // Seconds after which a retry may succeed (kRateLimited, kBusy); 0 when unknown.
  int retry_after_s() const { return retry_after_s_; }
  Error WithRetryAfter(int seconds) const {
    Error copy = *this;
    copy.retry_after_s_ = seconds;
    return copy;
  }

  // "engine (HTTP 404): No such image: foo" — for logs and user-facing messages.
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` and ": ".
  Error WithContext(std::string_view context) const;

 private:
  ErrorCode code_;
  std::string message_;
  int http_status_;
  int retry_after_s_ = 0;
};

}  // namespace sandbox
