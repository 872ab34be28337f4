// The MCP protocol versions this server speaks, the two eras they belong to, and how a legacy
// version is chosen at initialize.
//
// Legacy era (2024-11-05 .. 2025-11-25): an initialize handshake fixes the version for a stdio
// process or an HTTP session. Modern era (2026-07-28): no handshake; every request names its
// version and the client's capabilities in params._meta, and the server answers each request on
// its own. One server speaks both on the same endpoints.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace sandbox::mcp {

// The newest version initialize can negotiate (the legacy era's last).
inline constexpr std::string_view kLatestProtocolVersion = "2025-11-25";
// The stateless revision, spoken without initialize.
inline constexpr std::string_view kModernProtocolVersion = "2026-07-28";
// What a Streamable HTTP request without an MCP-Protocol-Version header is assumed to speak
// when no session says otherwise.
inline constexpr std::string_view kDefaultHttpProtocolVersion = "2025-03-26";

// The legacy versions initialize accepts, newest first: 2025-11-25, 2025-06-18, 2025-03-26,
// 2024-11-05.
std::span<const std::string_view> SupportedProtocolVersions();

bool IsSupportedProtocolVersion(std::string_view version);

// Every version of both eras, newest first: what server/discover lists as supportedVersions and
// what an UnsupportedProtocolVersionError (-32022) names as supported.
std::span<const std::string_view> AllProtocolVersions();

// True for the versions served without initialize (2026-07-28).
bool IsModernProtocolVersion(std::string_view version);

// Echoes a supported requested version; otherwise answers the latest (the client then decides
// whether it can go on).
std::string NegotiateProtocolVersion(std::string_view requested);

// JSON-RPC batches exist in 2025-03-26 only (added then, removed in 2025-06-18).
bool AllowsBatches(std::string_view version);

}  // namespace sandbox::mcp
