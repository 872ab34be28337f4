#include "sandbox/docker/api_version.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace sandbox::docker {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseNumber(std::string_view s, int& out) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string ApiVersion::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

Result<ApiVersion> ApiVersion::Parse(std::string_view text) {
  std::string_view s = Trim(text);
  auto dot = s.find('.');
  ApiVersion v;
  if (dot == std::string_view::npos || !ParseNumber(s.substr(0, dot), v.major) ||
      !ParseNumber(s.substr(dot + 1), v.minor)) {
    return Error(ErrorCode::kProtocol,
                 "malformed Docker API version '" + std::string(text) + "' (want MAJOR.MINOR)");
  }
  return v;
}

Result<ApiVersion> NegotiateApiVersion(std::string_view engine_header, ApiVersion cap,
                                       ApiVersion minimum) {
  if (cap < minimum) {
    return Error(ErrorCode::kInvalidArgument, "configured maximum Docker API version " +
                                                  cap.ToString() + " is below the minimum " +
                                                  minimum.ToString());
  }
  if (Trim(engine_header).empty()) {
    return Error(ErrorCode::kProtocol, "Docker engine sent no Api-Version header on /_ping");
  }
  auto engine = ApiVersion::Parse(engine_header);
  if (!engine.ok()) return engine.error();
  if (*engine < minimum) {
    return Error(ErrorCode::kUnsupported, "Docker engine API version " + engine->ToString() +
                                              " is older than the minimum this server supports (" +
                                              minimum.ToString() + "); upgrade Docker");
  }
  return std::min(*engine, cap);
}

Status CheckEngineMinimum(ApiVersion chosen, std::string_view engine_minimum) {
  if (Trim(engine_minimum).empty()) return OkStatus();
  auto minimum = ApiVersion::Parse(engine_minimum);
  if (!minimum.ok()) return minimum.error();
  if (chosen < *minimum) {
    return Error(ErrorCode::kUnsupported,
                 "Docker engine requires API version " + minimum->ToString() +
                     " or newer, but this server speaks at most " + chosen.ToString() +
                     "; use an older engine or a newer server");
  }
  return OkStatus();
}

}  // namespace sandbox::docker
