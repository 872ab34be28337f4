#include "sandbox/core/utf8.h"

#include <cstdint>

namespace sandbox {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid sequence at bytes[i], or 0 when invalid; then `maximal` is the length of
// the maximal invalid subpart (at least 1) and `incomplete` tells whether the input ended inside
// a sequence that was valid so far.
std::size_t SequenceAt(std::string_view bytes, std::size_t i, std::size_t& maximal,
                       bool& incomplete) {
  const auto b0 = static_cast<std::uint8_t>(bytes[i]);
  incomplete = false;
  maximal = 1;
  if (b0 < 0x80) return 1;
  std::size_t need = 0;
  std::uint8_t lo = 0x80;
  std::uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  for (std::size_t k = 1; k <= need; ++k) {
    if (i + k >= bytes.size()) {
      incomplete = true;
      maximal = k;
      return 0;
    }
    const auto b = static_cast<std::uint8_t>(bytes[i + k]);
    const std::uint8_t low = k == 1 ? lo : 0x80;
    const std::uint8_t high = k == 1 ? hi : 0xBF;
    if (b < low || b > high) {
      maximal = k;
      return 0;
    }
  }
  return need + 1;
}

}  // namespace

std::string RepairUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::size_t maximal = 0;
    bool incomplete = false;
    const std::size_t n = SequenceAt(bytes, i, maximal, incomplete);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out.append(kReplacement);
      i += maximal;
    }
  }
  return out;
}

std::size_t Utf8SequenceLength(std::string_view bytes, std::size_t i) {
  std::size_t maximal = 0;
  bool incomplete = false;
  return i < bytes.size() ? SequenceAt(bytes, i, maximal, incomplete) : 0;
}

bool IsValidUtf8(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::size_t maximal = 0;
    bool incomplete = false;
    std::size_t n = SequenceAt(bytes, i, maximal, incomplete);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::size_t CompleteUtf8Prefix(std::string_view bytes) {
  // Only the last three bytes can start an unfinished sequence.
  const std::size_t start = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (std::size_t i = start; i < bytes.size(); ++i) {
    std::size_t maximal = 0;
    bool incomplete = false;
    if (SequenceAt(bytes, i, maximal, incomplete) == 0 && incomplete) return i;
  }
  return bytes.size();
}

std::string Utf8StreamDecoder::Feed(std::string_view bytes) {
  tail_.append(bytes);
  const std::size_t complete = CompleteUtf8Prefix(tail_);
  const std::string_view whole = tail_;
  std::string out = RepairUtf8(whole.substr(0, complete));
  tail_.erase(0, complete);
  return out;
}

std::string Utf8StreamDecoder::Flush() {
  std::string out = RepairUtf8(tail_);
  tail_.clear();
  return out;
}

}  // namespace sandbox
