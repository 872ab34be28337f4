// The size of text once it is a JSON string, as the client receives it (issue 34): an answer is
// bounded in those bytes, not in the bytes a program printed. A control byte escapes to six
// characters (\u0001), a quote, backslash or newline to two, anything else stays one byte
// (nlohmann::json's dump with ensure_ascii false, as every answer of this server is written).
// Pure functions on valid UTF-8 (RepairUtf8 first).
#pragma once

#include <cstddef>
#include <string_view>

namespace sandbox {

// Bytes `utf8` takes inside a JSON string's quotes.
std::size_t JsonEscapedBytes(std::string_view utf8);

// The length of the longest prefix of `utf8` that ends on a character boundary and takes at
// most `max_escaped` bytes escaped.
std::size_t JsonPrefixWithin(std::string_view utf8, std::size_t max_escaped);

// The start of the longest suffix of `utf8` that begins on a character boundary and takes at
// most `max_escaped` bytes escaped.
std::size_t JsonSuffixWithin(std::string_view utf8, std::size_t max_escaped);

// Bytes of the standard base64 of `raw` bytes.
constexpr std::size_t Base64Bytes(std::size_t raw) { return (raw + 2) / 3 * 4; }

}  // namespace sandbox
