// UTF-8 repair for bytes that must become JSON strings (program output, file names): a Python
// program may write any bytes, and nlohmann::json refuses to serialize invalid UTF-8.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox::mcp {

// Replaces each maximal invalid subsequence with U+FFFD (the WHATWG/Unicode "maximal subpart"
// practice, as Python's errors="replace" does). Valid input comes back unchanged.
std::string RepairUtf8(std::string_view bytes);

bool IsValidUtf8(std::string_view bytes);

// The length of the longest prefix of `bytes` that does not end inside an incomplete (but so
// far valid) multi-byte sequence, so a stream cut mid-character can keep its tail for later.
std::size_t CompleteUtf8Prefix(std::string_view bytes);

}  // namespace sandbox::mcp
