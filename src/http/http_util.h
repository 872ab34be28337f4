// Small helpers shared by the HTTP transports (private to sandbox_http).
#pragma once

#include <httplib.h>

#include <string>
#include <string_view>

#include "sandbox/core/slot_limiter.h"
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

inline void SendJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(mcp::DumpJson(body), "application/json");
}

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The media type of a Content-Type value, lower-cased, without parameters.
inline std::string MediaType(std::string_view value) {
  return Lower(Trim(value.substr(0, value.find(';'))));
}

// Whether an Accept header allows `type` ("application/json"), wildcards included.
inline bool Accepts(std::string_view accept, std::string_view type) {
  std::string_view major = type.substr(0, type.find('/'));
  while (!accept.empty()) {
    auto comma = accept.find(',');
    std::string range = MediaType(accept.substr(0, comma));
    if (range == type || range == "*/*" || range == std::string(major) + "/*") return true;
    if (comma == std::string_view::npos) break;
    accept.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace sandbox::http::detail
