#include "sandbox/core/log_context.h"

#include "sandbox/core/log_safe.h"

namespace sandbox {
namespace {

// One per thread: a thread serves one request at a time.
thread_local std::string current_request_id;
thread_local const LogFields* current_fields = nullptr;

}  // namespace

std::string_view CurrentRequestId() { return current_request_id; }

void SetRequestId(std::string_view id) { current_request_id.assign(id.data(), id.size()); }

const LogFields* CurrentLogFields() { return current_fields; }

std::string RenderLogFields(const LogFields& fields) {
  std::string out;
  for (const auto& field : fields) {
    out += ' ';
    out += field.key;
    out += '=';
    if (const auto* number = std::get_if<std::int64_t>(&field.value)) {
      out += std::to_string(*number);
    } else {
      // The audit line's longest value (the code, with log_run_code) is cut at 4 KiB before.
      out += LogValue(std::get<std::string>(field.value), kLogMessageMaxBytes / 2);
    }
  }
  return out;
}

ScopedLogFields::ScopedLogFields(const LogFields& fields) : previous_(current_fields) {
  current_fields = &fields;
}

ScopedLogFields::~ScopedLogFields() { current_fields = previous_; }

}  // namespace sandbox
