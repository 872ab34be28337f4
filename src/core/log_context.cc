#include "sandbox/core/log_context.h"

namespace sandbox {
namespace {

// One per thread: a thread serves one request at a time.
thread_local std::string current_request_id;

}  // namespace

std::string_view CurrentRequestId() { return current_request_id; }

void SetRequestId(std::string_view id) { current_request_id.assign(id.data(), id.size()); }

}  // namespace sandbox
