// Unguessable identifiers (MCP session ids, run ids, request ids) from the kernel's CSPRNG.
// Thread-safety: safe from any thread.
#pragma once

#include <cstddef>
#include <string>

namespace sandbox {

// `bytes` random bytes as lower-case hex (visible ASCII, as Mcp-Session-Id requires).
// Aborts if the kernel cannot supply randomness: guessable ids are worse than no server.
std::string RandomHexId(std::size_t bytes);

}  // namespace sandbox
