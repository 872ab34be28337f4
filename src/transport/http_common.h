// What the two HTTP transports (Streamable HTTP and legacy HTTP+SSE) share, private to
// sandbox_transport: the Outbound that turns messages into SSE events, the refusal of a stream
// beyond a stream limit, and the principal of a request.
#pragma once

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/core/slot_limiter.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/http/sse_channel.h"
#include "sandbox/mcp/json_rpc.h"
#include "sandbox/mcp/outbound.h"

namespace sandbox::transport::detail {

// Sends each message as an SSE `message` event on `channel`.
class SseOutbound final : public mcp::Outbound {
 public:
  explicit SseOutbound(std::shared_ptr<http::SseChannel> channel) : channel_(std::move(channel)) {}
  void Send(const nlohmann::json& message) override {
    channel_->Push(http::FormatSseEvent("message", mcp::DumpJson(message)));
  }

 private:
  std::shared_ptr<http::SseChannel> channel_;
};

// A stream beyond a stream limit, refused at once rather than queued behind the open ones for
// an HTTP worker: 503 past the server's bound (server.max_streams), 429 past the principal's
// share of it (per_principal.max_streams).
inline void SendTooManyStreams(httplib::Response& res, const SlotLimiter& limiter,
                               SlotLimiter::Refusal why, const nlohmann::json& id = nullptr) {
  res.set_header("Retry-After", "1");
  const bool mine = why == SlotLimiter::Refusal::kPerKey;
  http::SendRpcError(res, mine ? 429 : 503, mcp::rpc_code::kServerError,
                     std::string(mine ? "Too Many Requests: " : "Service Unavailable: ") +
                         limiter.RefusalMessage(why),
                     id);
}

// The principal of a request: its bearer token's name by `resolver`, "local" without one.
inline std::string PrincipalOf(const http::PrincipalResolver& resolver,
                               const httplib::Request& req) {
  if (!resolver) return std::string(http::kLocalPrincipal);
  return resolver(req.get_header_value("Authorization"));
}

}  // namespace sandbox::transport::detail
