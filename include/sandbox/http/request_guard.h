// RequestGuard: the checks every HTTP request passes before routing (installed as httplib's
// pre-routing handler): Host and Origin validation against DNS rebinding, and the bearer token.
//
// - Host must name a loopback address (localhost, 127.0.0.0/8, [::1]) or an entry of
//   allowed_hosts (with or without port); otherwise 403. A missing Host is refused too.
// - Origin may be absent (non-browser clients send none); when present its host must be loopback
//   or the whole origin must be in allowed_origins; otherwise 403.
// - With a token configured (`token`, or any of the named `tokens`), "Authorization: Bearer
//   <token>" must carry one of them (compared in constant time, against every configured token
//   so timing tells nothing about which); otherwise 401 with WWW-Authenticate: Bearer.
// - Principal(): whom a request acts for, the key of session ownership: the name of its token
//   ("default" for `token`), or "local" when the server has no token at all.
// - Admin paths (/admin and below) take an admin token instead (`admin_tokens`, compared the
//   same way): a run token is refused there (401) and an admin token everywhere else. Without
//   admin tokens they answer 404, saying the admin API is disabled.
// - Exempt paths (/healthz by default) skip every check, for health probes.
// - SetTokens() replaces every token at once (configuration reload): a request is checked
//   against one set, old or new, never a mix.
//
// Thread-safety: every method is safe from any thread, SetTokens() included.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace httplib {
class Server;
}

namespace sandbox::http {

// The principal of a request without any configured token (and of stdio).
inline constexpr std::string_view kLocalPrincipal = "local";
// The principal of server.token (SANDBOX_MCP_TOKEN).
inline constexpr std::string_view kDefaultPrincipal = "default";

// Maps a request's Authorization header value to its principal.
using PrincipalResolver = std::function<std::string(std::string_view authorization)>;

struct GuardOptions {
  std::string token;                         // empty: no authentication (unless `tokens`)
  std::vector<std::string> allowed_hosts;    // Host values accepted besides loopback names
  std::vector<std::string> allowed_origins;  // e.g. "https://app.example.com"
  std::vector<std::string> exempt_paths = {"/healthz"};
  std::map<std::string, std::string> tokens;        // more bearer tokens: principal name -> token
  std::map<std::string, std::string> admin_tokens;  // of the admin API: name -> token
};

// Paths under it are the admin API's.
inline constexpr std::string_view kAdminPrefix = "/admin";
bool IsAdminPath(std::string_view path);

struct Rejection {
  int status = 403;
  std::string message;
};

// The X-Request-Id of an answer: the client's own when it sent a usable one (1-64 of
// [A-Za-z0-9._-], so it cannot inject into logs or headers), else 16 random hex digits.
std::string RequestIdFor(std::string_view presented);

class RequestGuard {
 public:
  explicit RequestGuard(GuardOptions options);

  // Header values as received (empty when absent; `has_origin` tells an empty Origin apart).
  std::optional<Rejection> Check(std::string_view path, std::string_view host, bool has_origin,
                                 std::string_view origin, std::string_view authorization) const;

  // Installs the guard as `server`'s pre-routing handler; rejections get a JSON-RPC error body.
  // It also sets every answer's X-Request-Id (RequestIdFor).
  void Install(httplib::Server& server) const;

  // The principal of a request that passed Check(): the name of the token it carries
  // ("default" for `token`), "local" when no token is configured. "" for a request whose
  // token matches none (Check() refuses those).
  std::string Principal(std::string_view authorization) const;
  // Principal() as a function, for the transports and the HTTP API; the guard must outlive it.
  PrincipalResolver Resolver() const;
  bool authenticates() const;

  // The name of the admin token a request carries; "" when it carries none (or admin is off).
  std::string AdminPrincipal(std::string_view authorization) const;
  bool admin_enabled() const;

  // Replaces the run tokens (`token`, `tokens`) and the admin tokens.
  void SetTokens(const std::string& token, const std::map<std::string, std::string>& tokens,
                 const std::map<std::string, std::string>& admin_tokens);

 private:
  using Named = std::vector<std::pair<std::string, std::string>>;  // (principal, token)
  struct Tokens {
    Named run;    // server.token as "default", then server.tokens
    Named admin;  // server.admin_tokens
  };
  bool HostAllowed(std::string_view host) const;
  bool OriginAllowed(std::string_view origin) const;
  std::shared_ptr<const Tokens> tokens() const;

  GuardOptions options_;
  mutable std::mutex tokens_mu_;
  std::shared_ptr<const Tokens> tokens_;  // replaced whole by SetTokens
};

// True for "localhost", IPv4 127.0.0.0/8 and "::1" (no brackets, no port).
bool IsLoopbackName(std::string_view host);

}  // namespace sandbox::http
