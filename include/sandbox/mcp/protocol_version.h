// The MCP protocol versions this server speaks and how one is chosen at initialize.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace sandbox::mcp {

inline constexpr std::string_view kLatestProtocolVersion = "2025-11-25";
// What a Streamable HTTP request without an MCP-Protocol-Version header is assumed to speak
// when no session says otherwise.
inline constexpr std::string_view kDefaultHttpProtocolVersion = "2025-03-26";

// Newest first: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05.
std::span<const std::string_view> SupportedProtocolVersions();

bool IsSupportedProtocolVersion(std::string_view version);

// Echoes a supported requested version; otherwise answers the latest (the client then decides
// whether it can go on).
std::string NegotiateProtocolVersion(std::string_view requested);

// JSON-RPC batches exist in 2025-03-26 only (added then, removed in 2025-06-18).
bool AllowsBatches(std::string_view version);

}  // namespace sandbox::mcp
