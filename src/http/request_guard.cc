#include "sandbox/http/request_guard.h"

#include <httplib.h>

#include <algorithm>
#include <cstdint>

#include "sandbox/core/log_context.h"
#include "sandbox/core/random_id.h"
#include "sandbox/core/sha256.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::http {
namespace {

// "host:port", "[v6]:port", "[v6]" or "host" -> the host name, lower-cased, brackets removed.
std::string HostName(std::string_view authority) {
  authority = Trim(authority);
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return {};
    return Lower(authority.substr(1, close - 1));
  }
  auto colon = authority.find(':');
  if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos) {
    return Lower(authority);  // a bare IPv6 address
  }
  return Lower(authority.substr(0, colon));
}

bool IsIpv4Loopback(std::string_view host) {
  if (!host.starts_with("127.")) return false;
  int parts = 0;
  int digits = 0;
  int value = 0;
  for (char c : host) {
    if (c == '.') {
      if (digits == 0) return false;
      ++parts;
      digits = 0;
      value = 0;
    } else if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      if (++digits > 3 || value > 255) return false;
    } else {
      return false;
    }
  }
  return parts == 3 && digits > 0;
}

std::string NormalizeOrigin(std::string_view origin) {
  std::string out = Lower(Trim(origin));
  while (!out.empty() && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

bool IsLoopbackName(std::string_view host) {
  return host == "localhost" || host == "::1" || IsIpv4Loopback(host);
}

namespace {

// The name of the token `authorization` carries among `named`; "" for none.
std::string MatchBearer(std::string_view authorization,
                        const std::vector<std::pair<std::string, std::string>>& named) {
  authorization = Trim(authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size() ||
      Lower(authorization.substr(0, kScheme.size())) != kScheme) {
    return {};
  }
  const std::string_view presented = Trim(authorization.substr(kScheme.size()));
  // Every token is compared, matched or not, so timing does not tell which one matched.
  std::string found;
  for (const auto& [name, token] : named) {
    if (ConstantTimeEquals(presented, token) && found.empty()) found = name;
  }
  return found;
}

}  // namespace

bool IsAdminPath(std::string_view path) {
  return path == kAdminPrefix ||
         (path.starts_with(kAdminPrefix) && path.size() > kAdminPrefix.size() &&
          path[kAdminPrefix.size()] == '/');
}

RequestGuard::RequestGuard(GuardOptions options) : options_(std::move(options)) {
  SetTokens(options_.token, options_.tokens, options_.admin_tokens);
}

void RequestGuard::SetTokens(const std::string& token,
                             const std::map<std::string, std::string>& tokens,
                             const std::map<std::string, std::string>& admin_tokens) {
  auto next = std::make_shared<Tokens>();
  if (!token.empty()) next->run.emplace_back(kDefaultPrincipal, token);
  for (const auto& [name, value] : tokens) {
    if (!value.empty()) next->run.emplace_back(name, value);
  }
  for (const auto& [name, value] : admin_tokens) {
    if (!value.empty()) next->admin.emplace_back(name, value);
  }
  std::lock_guard lock(tokens_mu_);
  tokens_ = std::move(next);
}

std::shared_ptr<const RequestGuard::Tokens> RequestGuard::tokens() const {
  std::lock_guard lock(tokens_mu_);
  return tokens_;
}

bool RequestGuard::authenticates() const { return !tokens()->run.empty(); }

bool RequestGuard::admin_enabled() const { return !tokens()->admin.empty(); }

std::string RequestGuard::AdminPrincipal(std::string_view authorization) const {
  const auto current = tokens();
  if (current->admin.empty()) return {};
  return MatchBearer(authorization, current->admin);
}

bool RequestGuard::HostAllowed(std::string_view host) const {
  std::string name = HostName(host);
  if (name.empty()) return false;
  if (IsLoopbackName(name)) return true;
  std::string full = Lower(Trim(host));
  for (const auto& allowed : options_.allowed_hosts) {
    std::string entry = Lower(allowed);
    if (entry == full || entry == name) return true;
  }
  return false;
}

bool RequestGuard::OriginAllowed(std::string_view origin) const {
  std::string normalized = NormalizeOrigin(origin);
  for (const auto& allowed : options_.allowed_origins) {
    if (NormalizeOrigin(allowed) == normalized) return true;
  }
  auto scheme_end = normalized.find("://");
  if (scheme_end == std::string::npos) return false;  // "null" and other opaque origins
  std::string scheme = normalized.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return false;
  std::string_view authority = normalized;
  authority.remove_prefix(scheme_end + 3);
  authority = authority.substr(0, authority.find('/'));
  return IsLoopbackName(HostName(authority));
}

std::string RequestGuard::Principal(std::string_view authorization) const {
  const auto current = tokens();
  if (current->run.empty()) return std::string(kLocalPrincipal);
  return MatchBearer(authorization, current->run);
}

PrincipalResolver RequestGuard::Resolver() const {
  return [this](std::string_view authorization) { return Principal(authorization); };
}

std::optional<Rejection> RequestGuard::Check(std::string_view path, std::string_view host,
                                             bool has_origin, std::string_view origin,
                                             std::string_view authorization) const {
  if (std::find(options_.exempt_paths.begin(), options_.exempt_paths.end(), path) !=
      options_.exempt_paths.end()) {
    return std::nullopt;
  }
  if (!HostAllowed(host)) {
    return Rejection{403,
                     "Forbidden: Host header not allowed (DNS rebinding protection); add it "
                     "to server.allowed_hosts to accept it"};
  }
  if (has_origin && !OriginAllowed(origin)) {
    return Rejection{403, "Forbidden: Origin not allowed; add it to server.allowed_origins"};
  }
  if (IsAdminPath(path)) {
    if (!admin_enabled()) {
      return Rejection{404,
                       "Not Found: the admin API is disabled; configure server.admin_tokens to "
                       "enable it"};
    }
    if (AdminPrincipal(authorization).empty()) {
      return Rejection{401,
                       "Unauthorized: the admin API needs Authorization: Bearer <admin token> "
                       "(server.admin_tokens); run tokens are not accepted here"};
    }
    return std::nullopt;
  }
  if (authenticates() && Principal(authorization).empty()) {
    return Rejection{401, "Unauthorized: send Authorization: Bearer <token>"};
  }
  return std::nullopt;
}

std::string RequestIdFor(std::string_view presented) {
  const bool usable = !presented.empty() && presented.size() <= 64 &&
                      std::all_of(presented.begin(), presented.end(), [](char c) {
                        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                               (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
                      });
  return usable ? std::string(presented) : RandomHexId(8);
}

void RequestGuard::Install(httplib::Server& server) const {
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // Every answer, refusals included, names its request, and so does every log line written
    // while serving it (cleared once the answer is written: ClearRequestIdAfterAnswer).
    const std::string request_id = RequestIdFor(req.get_header_value("X-Request-Id"));
    res.set_header("X-Request-Id", request_id);
    SetRequestId(request_id);
    auto rejection = Check(req.path, req.get_header_value("Host"), req.has_header("Origin"),
                           req.get_header_value("Origin"), req.get_header_value("Authorization"));
    if (!rejection) return httplib::Server::HandlerResponse::Unhandled;
    if (rejection->status == 401) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"sandbox-mcp\"");
    }
    SendRpcError(res, rejection->status, jsonrpc::rpc_code::kServerError, rejection->message);
    return httplib::Server::HandlerResponse::Handled;
  });
}

}  // namespace sandbox::http
