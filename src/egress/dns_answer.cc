#include "dns_answer.h"

#include <cstddef>
#include <cstdint>

namespace sandbox::egress {
namespace {

constexpr std::size_t kHeaderBytes = 12;
constexpr std::size_t kMaxName = 255;  // RFC 1035 2.3.4, length octets included
constexpr std::uint8_t kQr = 0x80;
constexpr std::uint8_t kOpcodeMask = 0x78;
constexpr std::uint8_t kRd = 0x01;
constexpr std::uint8_t kRa = 0x80;
constexpr std::uint8_t kNxDomain = 3;

std::uint8_t Byte(std::string_view s, std::size_t i) { return static_cast<std::uint8_t>(s[i]); }

void AppendLabelText(std::string& out, std::string_view label) {
  for (char c : label) {
    const auto u = static_cast<std::uint8_t>(c);
    if (u > 0x20 && u < 0x7f && c != '.' && c != '\\') {
      out.push_back(c);
    } else {
      const std::string digits = std::to_string(u);
      out.push_back('\\');
      out.append(3 - digits.size(), '0');
      out.append(digits);
    }
  }
}

}  // namespace

std::optional<DnsAnswer> NullDnsAnswer(std::string_view query) {
  if (query.size() < kHeaderBytes) return std::nullopt;
  const std::uint8_t flags = Byte(query, 2);
  if ((flags & kQr) != 0 || (flags & kOpcodeMask) != 0) return std::nullopt;
  if (Byte(query, 4) != 0 || Byte(query, 5) != 1) return std::nullopt;  // QDCOUNT 1
  DnsAnswer out;
  std::size_t at = kHeaderBytes;
  for (;;) {
    if (at >= query.size()) return std::nullopt;
    const std::uint8_t length = Byte(query, at);
    if (length == 0) {
      ++at;
      break;
    }
    if (length > 63) return std::nullopt;  // a compression pointer or a reserved label type
    if (at + 1 + length > query.size()) return std::nullopt;
    if (!out.name.empty()) out.name.push_back('.');
    AppendLabelText(out.name, query.substr(at + 1, length));
    at += 1 + length;
    if (at - kHeaderBytes + 1 > kMaxName) return std::nullopt;
  }
  if (at + 4 > query.size()) return std::nullopt;  // QTYPE, QCLASS
  at += 4;
  if (out.name.empty()) out.name = ".";
  out.response.assign(query.substr(0, at));
  out.response[2] = static_cast<char>(kQr | (flags & kRd));  // a response, RD echoed
  out.response[3] = static_cast<char>(kRa | kNxDomain);
  for (std::size_t i = 6; i < kHeaderBytes; ++i) out.response[i] = 0;  // no records follow
  return out;
}

}  // namespace sandbox::egress
