#include "sandbox/mcp/request_state.h"

#include <nlohmann/json.hpp>

#include "sandbox/core/base64.h"
#include "sandbox/core/sha256.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

std::int64_t UnixMs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

Error Refused() {
  return Error(ErrorCode::kInvalidArgument,
               "requestState failed its integrity check (altered, issued to another client or "
               "tool, or expired): call the tool again without requestState");
}

}  // namespace

RequestStateSealer::RequestStateSealer(std::string key, std::chrono::seconds ttl, Clock now)
    : key_(std::move(key)), ttl_(ttl), now_(std::move(now)) {}

std::chrono::system_clock::time_point RequestStateSealer::Now() const {
  return now_ ? now_() : std::chrono::system_clock::now();
}

std::string RequestStateSealer::Seal(std::string_view principal, std::string_view tool,
                                     std::string_view state) const {
  json payload = {{"s", std::string(state)},
                  {"p", std::string(principal)},
                  {"t", std::string(tool)},
                  {"x", UnixMs(Now() + ttl_)}};
  std::string body = Base64Encode(payload.dump());
  return body + "." + HmacSha256Hex(key_, body);
}

Result<std::string> RequestStateSealer::Open(std::string_view principal, std::string_view tool,
                                             std::string_view sealed) const {
  auto dot = sealed.rfind('.');
  if (dot == std::string_view::npos) return Refused();
  std::string_view body = sealed.substr(0, dot);
  if (!ConstantTimeEquals(sealed.substr(dot + 1), HmacSha256Hex(key_, body))) return Refused();
  auto text = Base64Decode(body);
  if (!text.ok()) return Refused();
  json payload = json::parse(*text, nullptr, false);
  if (!payload.is_object() || !payload.contains("s") || !payload["s"].is_string() ||
      payload.value("p", "") != principal || payload.value("t", "") != tool ||
      !payload.contains("x") || !payload["x"].is_number_integer() ||
      payload["x"].get<std::int64_t>() < UnixMs(Now())) {
    return Refused();
  }
  return payload["s"].get<std::string>();
}

}  // namespace sandbox::mcp
