// RequestGuard: the checks every HTTP request passes before routing (installed as httplib's
// pre-routing handler): Host and Origin validation against DNS rebinding, and the bearer token.
//
// - Host must name a loopback address (localhost, 127.0.0.0/8, [::1]) or an entry of
//   allowed_hosts (with or without port); otherwise 403. A missing Host is refused too.
// - Origin may be absent (non-browser clients send none); when present its host must be loopback
//   or the whole origin must be in allowed_origins; otherwise 403.
// - With a token configured, "Authorization: Bearer <token>" is required (compared in constant
//   time); otherwise 401 with WWW-Authenticate: Bearer.
// - Exempt paths (/healthz by default) skip every check, for health probes.
//
// Thread-safety: immutable after construction; Check() is safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace httplib {
class Server;
}

namespace sandbox::http {

struct GuardOptions {
  std::string token;                         // empty: no authentication
  std::vector<std::string> allowed_hosts;    // Host values accepted besides loopback names
  std::vector<std::string> allowed_origins;  // e.g. "https://app.example.com"
  std::vector<std::string> exempt_paths = {"/healthz"};
};

struct Rejection {
  int status = 403;
  std::string message;
};

class RequestGuard {
 public:
  explicit RequestGuard(GuardOptions options);

  // Header values as received (empty when absent; `has_origin` tells an empty Origin apart).
  std::optional<Rejection> Check(std::string_view path, std::string_view host, bool has_origin,
                                 std::string_view origin, std::string_view authorization) const;

  // Installs the guard as `server`'s pre-routing handler; rejections get a JSON-RPC error body.
  void Install(httplib::Server& server) const;

 private:
  bool HostAllowed(std::string_view host) const;
  bool OriginAllowed(std::string_view origin) const;
  bool TokenMatches(std::string_view authorization) const;

  GuardOptions options_;
};

// True for "localhost", IPv4 127.0.0.0/8 and "::1" (no brackets, no port).
bool IsLoopbackName(std::string_view host);

}  // namespace sandbox::http
