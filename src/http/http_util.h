// JSON-RPC error answers of the MCP transports (private to sandbox_http); the plain HTTP
// helpers are http_helpers.h's.
#pragma once

#include <httplib.h>

#include <string>
#include <string_view>

#include "sandbox/core/slot_limiter.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/mcp/json_rpc.h"

namespace sandbox::http::detail {

// An HTTP error whose body is a JSON-RPC error (what MCP clients parse), with the request's id
// when the body was read that far (null otherwise) and the error's data when it has one.
inline void SendRpcError(httplib::Response& res, int status, int code, const std::string& message,
                         const nlohmann::json& id = nullptr, const nlohmann::json& data = nullptr) {
  res.status = status;
  const mcp::RpcError error{code, message};
  res.set_content(
      mcp::DumpJson(data.is_null() ? mcp::MakeError(id, error) : mcp::MakeError(id, error, data)),
      "application/json");
}

// A stream beyond a stream limit, refused at once rather than queued behind the open ones for
// an HTTP worker: 503 past the server's bound (server.max_streams), 429 past the principal's
// share of it (per_principal.max_streams).
inline void SendTooManyStreams(httplib::Response& res, const SlotLimiter& limiter,
                               SlotLimiter::Refusal why, const nlohmann::json& id = nullptr) {
  res.set_header("Retry-After", "1");
  const bool mine = why == SlotLimiter::Refusal::kPerKey;
  SendRpcError(res, mine ? 429 : 503, mcp::rpc_code::kServerError,
               std::string(mine ? "Too Many Requests: " : "Service Unavailable: ") +
                   limiter.RefusalMessage(why),
               id);
}

// The shared helpers (http_helpers.h) under the names the transports use.
using http::Accepts;
using http::Lower;
using http::MediaType;
using http::SendJson;
using http::Trim;

}  // namespace sandbox::http::detail
