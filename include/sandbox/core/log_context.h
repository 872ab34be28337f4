// The request a thread is working for, so that every log line written while serving a request
// names it (the log formatters print it: logging/request_id_flag.h, logging/json_formatter.h).
// The HTTP guard sets it when a request arrives and the server clears it once the answer is
// written; code that hands a request's work to another thread (TaskGroup, the API's stream
// thread) carries it over with ScopedRequestId. A value per thread, never configuration.
// Thread-safety: each thread sees only its own value.
#pragma once

#include <string>
#include <string_view>

namespace sandbox {

// "" when the thread works for no request (pool refills, expiry sweeps, start-up).
std::string_view CurrentRequestId();
void SetRequestId(std::string_view id);

// Sets the thread's request id for its lifetime, then restores the one before.
class ScopedRequestId {
 public:
  explicit ScopedRequestId(std::string_view id) : previous_(CurrentRequestId()) {
    SetRequestId(id);
  }
  ~ScopedRequestId() { SetRequestId(previous_); }
  ScopedRequestId(const ScopedRequestId&) = delete;
  ScopedRequestId& operator=(const ScopedRequestId&) = delete;

 private:
  std::string previous_;
};

}  // namespace sandbox
