#include "sandbox/mcp/protocol_version.h"

#include <algorithm>
#include <array>

namespace sandbox::mcp {
namespace {

constexpr std::array<std::string_view, 4> kVersions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                       "2024-11-05"};
constexpr std::array<std::string_view, 5> kAllVersions = {kModernProtocolVersion, "2025-11-25",
                                                          "2025-06-18", "2025-03-26", "2024-11-05"};

}  // namespace

std::span<const std::string_view> SupportedProtocolVersions() { return kVersions; }

bool IsSupportedProtocolVersion(std::string_view version) {
  return std::find(kVersions.begin(), kVersions.end(), version) != kVersions.end();
}

std::span<const std::string_view> AllProtocolVersions() { return kAllVersions; }

bool IsModernProtocolVersion(std::string_view version) { return version == kModernProtocolVersion; }

std::string NegotiateProtocolVersion(std::string_view requested) {
  return std::string(IsSupportedProtocolVersion(requested) ? requested : kLatestProtocolVersion);
}

bool AllowsBatches(std::string_view version) { return version == "2025-03-26"; }

}  // namespace sandbox::mcp
