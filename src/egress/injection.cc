#include "injection.h"

#include <algorithm>

#include "sandbox/core/base64.h"
#include "sandbox/http1/text.h"

namespace sandbox::egress {
namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void AddWithVariants(std::string_view text, std::vector<std::string>& out) {
  if (text.size() < kMinSecretBytes) return;
  out.emplace_back(text);
  if (text.find('/') != std::string_view::npos) {
    std::string escaped;
    for (char c : text) {
      if (c == '/') escaped.push_back('\\');
      escaped.push_back(c);
    }
    out.push_back(std::move(escaped));
  }
  out.push_back(Base64Encode(text));
}

// The credential of "<scheme> <credential>" (a scheme is a token), or "" for another value.
std::string_view CredentialOf(std::string_view value) {
  const auto space = value.find(' ');
  if (space == std::string_view::npos || space == 0) return {};
  if (!std::all_of(value.begin(), value.begin() + static_cast<std::ptrdiff_t>(space),
                   IsTokenChar)) {
    return {};
  }
  std::string_view credential = value.substr(space + 1);
  while (!credential.empty() && credential.front() == ' ') credential.remove_prefix(1);
  return credential;
}

}  // namespace

bool IsHttpToken(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), IsTokenChar);
}

std::string InjectableHeaderProblem(std::string_view name) {
  if (!IsHttpToken(name)) {
    return "a header name must be a token (letters, digits, !#$%&'*+-.^_`|~)";
  }
  const std::string lower = http::Lower(name);
  for (const char* refused : {"host", "content-length", "transfer-encoding", "connection",
                              "keep-alive", "te", "trailer", "upgrade", "expect"}) {
    if (lower == refused)
      return "the proxy cannot inject " + std::string(name) + ": it frames or routes the request";
  }
  if (lower.starts_with("proxy-")) {
    return "the proxy cannot inject " + std::string(name) + ": Proxy-* headers are for the proxy";
  }
  for (const char* own : {"accept-encoding", "range", "if-range"}) {
    if (lower == own) {
      return "the proxy cannot inject " + std::string(name) +
             ": it sets or drops that header itself (responses must stay scrubbable)";
    }
  }
  return "";
}

std::string SecretValueProblem(std::string_view value) {
  if (value.size() < kMinSecretBytes) {
    return "shorter than " + std::to_string(kMinSecretBytes) +
           " bytes (too short to scrub from responses)";
  }
  if (value.size() > kMaxSecretBytes) {
    return "longer than " + std::to_string(kMaxSecretBytes) + " bytes";
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return "only visible ASCII characters and spaces may be in it";
  }
  if (value.front() == ' ' || value.back() == ' ') return "it starts or ends with a space";
  const std::string_view credential = CredentialOf(value);
  if (!credential.empty() && credential.size() < kMinSecretBytes) {
    return "the credential after \"" + std::string(value.substr(0, value.find(' '))) +
           " \" is shorter than " + std::to_string(kMinSecretBytes) +
           " bytes (too short to scrub from responses)";
  }
  return "";
}

std::vector<std::string> ScrubPatterns(std::string_view value) {
  std::vector<std::string> out;
  AddWithVariants(value, out);
  AddWithVariants(CredentialOf(value), out);  // "<scheme> <credential>": it may come back alone
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const Injection* FindInjection(const std::vector<Injection>& rules, std::string_view host,
                               std::uint16_t port) {
  for (const Injection& rule : rules) {
    if (rule.host == host && rule.port == port) return &rule;
  }
  return nullptr;
}

bool HasInjectionHost(const std::vector<Injection>& rules, std::string_view host) {
  return std::any_of(rules.begin(), rules.end(),
                     [host](const Injection& rule) { return rule.host == host; });
}

}  // namespace sandbox::egress
