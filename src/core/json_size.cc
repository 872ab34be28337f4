#include "sandbox/core/json_size.h"

namespace sandbox {
namespace {

std::size_t EscapedByte(unsigned char c) {
  switch (c) {
    case '"':
    case '\\':
    case '\b':
    case '\f':
    case '\n':
    case '\r':
    case '\t':
      return 2;
    default:
      return c < 0x20 ? 6 : 1;
  }
}

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

std::size_t JsonEscapedBytes(std::string_view utf8) {
  std::size_t n = 0;
  for (char c : utf8) n += EscapedByte(static_cast<unsigned char>(c));
  return n;
}

std::size_t JsonPrefixWithin(std::string_view utf8, std::size_t max_escaped) {
  std::size_t used = 0;
  std::size_t i = 0;
  for (; i < utf8.size(); ++i) {
    used += EscapedByte(static_cast<unsigned char>(utf8[i]));
    if (used > max_escaped) break;
  }
  // Back to the start of the character cut in two, if any.
  while (i > 0 && i < utf8.size() && IsContinuation(static_cast<unsigned char>(utf8[i]))) --i;
  return i;
}

std::size_t JsonSuffixWithin(std::string_view utf8, std::size_t max_escaped) {
  std::size_t used = 0;
  std::size_t i = utf8.size();
  while (i > 0) {
    const std::size_t cost = EscapedByte(static_cast<unsigned char>(utf8[i - 1]));
    if (used + cost > max_escaped) break;
    used += cost;
    --i;
  }
  // Forward past continuation bytes of a character cut in two.
  while (i < utf8.size() && IsContinuation(static_cast<unsigned char>(utf8[i]))) ++i;
  return i;
}

}  // namespace sandbox
