// What the two HTTP transports (Streamable HTTP and legacy HTTP+SSE) share, private to
// sandbox_transport: the Outbound that turns messages into SSE events, taking a stream slot (and
// the refusal of a stream beyond a stream limit), reading a POSTed message, and the principal of
// a request.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/core/slot_limiter.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/http/sse_channel.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/outbound.h"

namespace sandbox::transport::detail {

// Sends each message as an SSE `message` event on `channel`.
class SseOutbound final : public mcp::Outbound {
 public:
  explicit SseOutbound(std::shared_ptr<http::SseChannel> channel) : channel_(std::move(channel)) {}
  void Send(const nlohmann::json& message) override {
    channel_->Push(http::FormatSseEvent("message", jsonrpc::DumpJson(message)));
  }

 private:
  std::shared_ptr<http::SseChannel> channel_;
};

// The last event of a legacy stream whose reader fell behind: a notifications/message at level
// error (there is no request to answer), so that a client that reads again sees why it ends.
inline std::string LegacyLastEvent(const std::string& reason) {
  return http::FormatSseEvent(
      "message", jsonrpc::DumpJson(jsonrpc::MakeNotification(
                     "notifications/message",
                     {{"level", "error"}, {"logger", "sandbox-mcp"}, {"data", reason}})));
}

// The last event of a tools/call stream whose reader fell behind: the request's answer, an
// error saying why (the run is cancelled).
inline http::SseChannel::LastEvent CallLastEvent(nlohmann::json id) {
  return [id = std::move(id)](const std::string& reason) {
    return http::FormatSseEvent("message", jsonrpc::DumpJson(jsonrpc::MakeError(
                                               id, {jsonrpc::rpc_code::kServerError, reason})));
  };
}

// A stream beyond a stream limit, refused at once rather than queued behind the open ones for
// an HTTP worker: 503 past the server's bound (server.max_streams), 429 past the principal's
// share of it (per_principal.max_streams).
inline void SendTooManyStreams(httplib::Response& res, const SlotLimiter& limiter,
                               SlotLimiter::Refusal why, const nlohmann::json& id = nullptr) {
  res.set_header("Retry-After", "1");
  const bool mine = why == SlotLimiter::Refusal::kPerKey;
  http::SendRpcError(res, mine ? 429 : 503, jsonrpc::rpc_code::kServerError,
                     std::string(mine ? "Too Many Requests: " : "Service Unavailable: ") +
                         limiter.RefusalMessage(why),
                     id);
}

// Takes a stream slot from `limiter` in `principal`'s name into `slot` (none without a limiter).
// False, with the refusal sent (naming `id`), when none is free.
inline bool TakeStreamSlot(const std::shared_ptr<SlotLimiter>& limiter,
                           const std::string& principal, httplib::Response& res,
                           std::shared_ptr<SlotLimiter::Slot>& slot,
                           const nlohmann::json& id = nullptr) {
  if (!limiter) return true;
  SlotLimiter::Refusal why = SlotLimiter::Refusal::kNone;
  slot = limiter->TryAcquire(principal, &why);
  if (!slot) SendTooManyStreams(res, *limiter, why, id);
  return slot != nullptr;
}

// The JSON message POSTed in `req`, or nullopt with the refusal sent: 415 unless it is
// application/json, 413 with `too_large` above `max_bytes`, 400 (-32700) when it does not parse.
inline std::optional<nlohmann::json> ReadJsonBody(const httplib::Request& req,
                                                  httplib::Response& res, std::size_t max_bytes,
                                                  const std::string& too_large) {
  if (http::MediaType(req.get_header_value("Content-Type")) != "application/json") {
    http::SendRpcError(res, 415, jsonrpc::rpc_code::kServerError,
                       "Unsupported Media Type: Content-Type must be application/json");
    return std::nullopt;
  }
  if (req.body.size() > max_bytes) {
    http::SendRpcError(res, 413, jsonrpc::rpc_code::kServerError, too_large);
    return std::nullopt;
  }
  auto parsed = jsonrpc::ParseJsonText(req.body);
  if (!parsed.ok()) {
    http::SendRpcError(res, 400, jsonrpc::rpc_code::kParseError,
                       jsonrpc::RpcParseError(parsed.error()));
    return std::nullopt;
  }
  return std::move(parsed).value();
}

// The principal of a request: its bearer token's name by `resolver`, "local" without one.
inline std::string PrincipalOf(const http::PrincipalResolver& resolver,
                               const httplib::Request& req) {
  if (!resolver) return std::string(http::kLocalPrincipal);
  return resolver(req.get_header_value("Authorization"));
}

}  // namespace sandbox::transport::detail
