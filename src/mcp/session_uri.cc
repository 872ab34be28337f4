#include "session_uri.h"

namespace sandbox::mcp {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

}  // namespace

std::string PercentEncodePath(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    bool keep = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (keep) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0x0F];
    }
  }
  return out;
}

std::optional<std::string> PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = HexValue(text[i + 1]);
    const int lo = HexValue(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return std::nullopt;
    out += c;
    i += 2;
  }
  if (out.find('\0') != std::string::npos) return std::nullopt;  // a raw NUL in the text
  return out;
}

std::string SessionFileUri(std::string_view session_id, std::string_view path) {
  return std::string(kSessionUriPrefix) + std::string(session_id) + "/files/" +
         PercentEncodePath(path);
}

std::optional<SessionFileRef> ParseSessionFileUri(std::string_view uri) {
  if (!uri.starts_with(kSessionUriPrefix)) return std::nullopt;
  uri.remove_prefix(kSessionUriPrefix.size());
  const auto slash = uri.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  const std::string_view id = uri.substr(0, slash);
  for (char c : id) {
    if (!IsIdChar(c)) return std::nullopt;
  }
  std::string_view rest = uri.substr(slash);
  constexpr std::string_view kFiles = "/files/";
  if (!rest.starts_with(kFiles)) return std::nullopt;
  rest.remove_prefix(kFiles.size());
  // A query or fragment is no part of a file's name (a literal ? or # is sent as %3F / %23).
  if (rest.empty() || rest.find_first_of("?#") != std::string_view::npos) return std::nullopt;
  auto path = PercentDecode(rest);
  if (!path || path->empty()) return std::nullopt;
  return SessionFileRef{std::string(id), std::move(*path)};
}

}  // namespace sandbox::mcp
