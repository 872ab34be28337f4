// UTF-8 repair for bytes that must become JSON strings (program output, file names): a program
// may write any bytes, and nlohmann::json refuses to serialize invalid UTF-8. Pure functions;
// Utf8StreamDecoder is one per stream, not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

// Replaces each maximal invalid subsequence with U+FFFD (as Python's errors="replace" does).
// Valid input comes back unchanged.
std::string RepairUtf8(std::string_view bytes);

// True when `bytes` is entirely valid UTF-8.
bool IsValidUtf8(std::string_view bytes);

// The length of the valid UTF-8 sequence at bytes[i] (1-4), 0 when there is none there.
std::size_t Utf8SequenceLength(std::string_view bytes, std::size_t i);

// The length of the longest prefix of `bytes` that does not end inside an incomplete (but so far
// valid) multi-byte sequence, so a stream cut mid-character can keep its tail for the next chunk.
std::size_t CompleteUtf8Prefix(std::string_view bytes);

// Decodes a byte stream that arrives in chunks: characters split across chunks are kept whole.
// Not thread-safe; one per stream.
class Utf8StreamDecoder {
 public:
  // The text of `bytes` after any tail kept from before; an incomplete final character is kept.
  std::string Feed(std::string_view bytes);
  // Whatever is left (an incomplete character becomes U+FFFD).
  std::string Flush();

 private:
  std::string tail_;
};

}  // namespace sandbox
