#include "sandbox/core/log_safe.h"

#include <cstdint>
#include <cstdio>

#include "sandbox/core/sha256.h"
#include "sandbox/core/utf8.h"

namespace sandbox {
namespace {

void AppendHexByte(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  out += buf;
}

// The code point of the valid sequence of `n` bytes at s[i].
std::uint32_t CodePoint(std::string_view s, std::size_t i, std::size_t n) {
  static constexpr std::uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  std::uint32_t cp = static_cast<unsigned char>(s[i]) & kLeadMask[n];
  for (std::size_t k = 1; k < n; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

bool PlainTokenByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '/' || c == '@' || c == '+' || c == '-';
}

}  // namespace

std::string LogEscape(std::string_view text, std::size_t max_bytes, bool quotes) {
  std::size_t end = text.size();
  if (end > max_bytes) {
    end = max_bytes;
    // Back up to a character boundary (never inside a UTF-8 sequence).
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  }
  std::string out;
  out.reserve(end + 8);
  for (std::size_t i = 0; i < end;) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = Utf8SequenceLength(text.substr(0, end), i);
    if (n == 0) {
      AppendHexByte(out, c);
      ++i;
      continue;
    }
    if (n == 1) {
      if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7F) {
        AppendHexByte(out, c);
      } else if (quotes && (c == '\\' || c == '"')) {
        out += '\\';
        out += static_cast<char>(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // C1 controls (NEL among them) and the Unicode line and paragraph separators: some log
    // viewers break lines there.
    const std::uint32_t cp = CodePoint(text, i, n);
    if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  if (end < text.size()) {
    out += " [... " + std::to_string(text.size() - end) + " bytes omitted]";
  }
  return out;
}

std::string LogQuoted(std::string_view text, std::size_t max_bytes) {
  return "\"" + LogEscape(text, max_bytes, true) + "\"";
}

std::string LogValue(std::string_view text, std::size_t max_bytes) {
  bool plain = !text.empty() && text.size() <= max_bytes;
  for (std::size_t i = 0; plain && i < text.size(); ++i) plain = PlainTokenByte(text[i]);
  return plain ? std::string(text) : LogQuoted(text, max_bytes);
}

std::string SessionDigest(std::string_view session_id) {
  return session_id.empty() ? std::string("-") : Sha256Hex(session_id).substr(0, 16);
}

std::string RedactSessionId(std::string_view text, std::string_view session_id) {
  if (session_id.empty()) return std::string(text);
  const std::string name = "session#" + SessionDigest(session_id);
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = text.find(session_id); at != std::string_view::npos;
       at = text.find(session_id, from)) {
    out.append(text.substr(from, at - from));
    out += name;
    from = at + session_id.size();
  }
  out.append(text.substr(from));
  return out;
}

}  // namespace sandbox
