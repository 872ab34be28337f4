// ApiVersion and the pure negotiation rule: which /vX.YY prefix this client uses with an engine.
// Thread-safety: value type and pure functions; safe from any thread.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"

namespace sandbox::docker {

struct ApiVersion {
  int major = 1;
  int minor = 41;

  // "1.41"
  std::string ToString() const;
  // Parses "1.41" (surrounding whitespace allowed); anything else is kProtocol.
  static Result<ApiVersion> Parse(std::string_view text);

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
  friend auto operator<=>(const ApiVersion&, const ApiVersion&) = default;
  friend bool operator==(const ApiVersion&, const ApiVersion&) = default;
};

// The oldest engine API this client speaks (Docker 19.03). Older engines are refused.
inline constexpr ApiVersion kMinApiVersion{1, 40};
// The version verified end to end on the project's machines (Docker 20.10).
inline constexpr ApiVersion kVerifiedApiVersion{1, 41};
// The highest version we ask for. Every request field and response field this module uses is
// unchanged from 1.40 through 1.47 (container create/inspect/list/wait/kill/remove/attach/archive,
// events Action/Actor, image inspect, _ping/version/info), so engines that refuse old versions
// (Docker 29.0-29.2 need >= 1.44) still work. Lower it with ClientOptions::max_api_version.
inline constexpr ApiVersion kMaxTestedApiVersion{1, 47};

// min(engine maximum, our cap). `engine_header` is the Api-Version header of GET /_ping.
// Fails with kUnsupported naming both versions when the engine is older than `minimum`, kProtocol
// when the header is malformed, kInvalidArgument when cap < minimum.
Result<ApiVersion> NegotiateApiVersion(std::string_view engine_header,
                                       ApiVersion cap = kMaxTestedApiVersion,
                                       ApiVersion minimum = kMinApiVersion);

// Checks the negotiated version against the engine's own minimum (MinAPIVersion of GET /version):
// an engine newer than every version we speak refuses our requests, so say so up front with
// kUnsupported naming both. An empty `engine_minimum` (not reported) passes; malformed is
// kProtocol.
Status CheckEngineMinimum(ApiVersion chosen, std::string_view engine_minimum);

}  // namespace sandbox::docker
