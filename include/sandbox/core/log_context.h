// The request a thread is working for, so that every log line written while serving a request
// names it (the log formatters print it: logging/request_id_flag.h, logging/json_formatter.h).
// The HTTP guard sets it when a request arrives and the server clears it once the answer is
// written; code that hands a request's work to another thread (TaskGroup, the API's stream
// thread) carries it over with ScopedRequestId. A value per thread, never configuration.
// Structured lines (the audit line) carry their values as fields of their own beside a fixed
// message: the text format renders them as ` key=value` after the message (LogValue: quoted and
// escaped unless a plain token), the JSON format as keys of the line's object, so no value a
// client chose can add a key or end the line. Set for one call with ScopedLogFields.
// Thread-safety: each thread sees only its own value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

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

// One field of a structured line: the key is the server's (a fixed name, never one of the
// formatters' own: time, level, logger, thread, msg, request_id), the value may be a client's.
struct LogField {
  std::string key;
  std::variant<std::string, std::int64_t> value;
};
using LogFields = std::vector<LogField>;

// The fields of the line this thread is writing, null when it writes a plain one.
const LogFields* CurrentLogFields();

// " key=value" for each field, in order (the text format's rendering).
std::string RenderLogFields(const LogFields& fields);

// Sets the thread's fields for its lifetime: wrap exactly one log call.
class ScopedLogFields {
 public:
  explicit ScopedLogFields(const LogFields& fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  const LogFields* previous_;
};

}  // namespace sandbox
