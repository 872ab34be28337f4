// Credentials outside the sandbox (docs/network.md, "Credentials"): per host of a pool's
// policy, headers the proxy adds to every request the code sends there, whose values the code
// never sees. The server reads each value from its own environment and hands it over on the
// proxy's stdin (control.h), so the value is in no environment, file or image of a container.
// What the upstream reflects of a value is scrubbed from its responses (scrubber.h).
// Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"

namespace sandbox::egress {

struct InjectHeader {
  std::string name;   // as the rule spells it
  std::string value;  // the secret
};

// The injection rules of one host and port (a CONNECT to exactly that target).
struct Injection {
  std::string host;  // normalized (config::NormalizeHostName), never an address
  std::uint16_t port = 443;
  std::vector<InjectHeader> headers;
  // The byte strings scrubbed from responses (ScrubPatterns of every value), longest first.
  std::vector<std::string> scrub;
};

// Bounds of a value: shorter ones would be scrubbed from unrelated text (and are no secret);
// longer ones than any token.
inline constexpr std::size_t kMinSecretBytes = 8;
inline constexpr std::size_t kMaxSecretBytes = 4096;
inline constexpr std::size_t kMaxInjections = 64;  // rules in one "set" line

// Whether `text` is an HTTP token (a header name, a method, an auth scheme).
bool IsHttpToken(std::string_view text);

// Why `name` cannot be injected ("" when it can): not a token, or a header that frames the
// request or routes it (Host, Content-Length, Transfer-Encoding, Connection and the other
// hop-by-hop ones, Proxy-*), or one the proxy sets itself (Accept-Encoding) or drops (Range,
// If-Range).
std::string InjectableHeaderProblem(std::string_view name);

// Why `value` cannot be a secret header value ("" when it can): its length bounds, and visible
// ASCII and inner spaces only. Never quotes the value.
std::string SecretValueProblem(std::string_view value);

// What to scrub from responses for one value: the value; for "<scheme> <credential>" (Bearer,
// Basic, token...) the credential alone; and of each, the form with '/' escaped as "\/" (JSON
// encoders that escape slashes) and the standard base64 encoding. All at least kMinSecretBytes.
std::vector<std::string> ScrubPatterns(std::string_view value);

// The injection of `host`:`port` among `rules`, or null.
const Injection* FindInjection(const std::vector<Injection>& rules, std::string_view host,
                               std::uint16_t port);

// Whether any rule names `host` (any port): a plain http:// request there is refused, since
// credentials go over HTTPS only.
bool HasInjectionHost(const std::vector<Injection>& rules, std::string_view host);

}  // namespace sandbox::egress
