// HttpTransportOptions: the settings both HTTP MCP transports (Streamable HTTP and legacy
// HTTP+SSE) take alike; each transport's options embed one as `http`.
#pragma once

#include <cstddef>
#include <memory>

#include "sandbox/core/slot_limiter.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/sse_channel.h"

namespace sandbox::transport {

struct HttpTransportOptions {
  std::size_t max_body_bytes = 8 << 20;    // a POSTed message above it: 413
  std::size_t max_concurrent_calls = 256;  // tools/call in flight across sessions; more: 503
  // Each stream the transport holds open (a legacy /sse stream for its life, a tools/call stream
  // until its result) takes a slot, as it holds an HTTP worker; none free: 503, the principal's
  // share taken: 429. Shared with the other transports; null: no bound but the transport's own.
  std::shared_ptr<SlotLimiter> stream_slots;
  http::SseOptions sse;
  // The bound of each stream's queue and the budget it counts against (memory.stream_queue_bytes,
  // memory.inflight_bytes): a reader that falls behind is dropped with a last message saying why.
  http::SseChannelLimits sse_queue;
  // The principal of a request from its Authorization header (RequestGuard::Resolver());
  // unset: every request is "local".
  http::PrincipalResolver principal;
};

}  // namespace sandbox::transport
