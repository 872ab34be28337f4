// Validate(): every check of a Config before anything starts, each refusal naming the field.
#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "object_reader.h"
#include "sandbox/config/bounds.h"
#include "sandbox/config/config.h"
#include "sandbox/config/limits_check.h"
#include "sandbox/core/replica_id.h"

namespace sandbox::config {
namespace {

using detail::Invalid;

Status CheckLimits(const Limits& l, const std::string& path) {
  if (!(l.timeout_s > 0)) return Invalid(path + ".timeout_s", "must be positive");
  if (l.memory_bytes < (16LL << 20))
    return Invalid(path + ".memory_bytes", "must be at least 16 MiB");
  if (!(l.cpus > 0)) return Invalid(path + ".cpus", "must be positive");
  if (l.pids < 8) return Invalid(path + ".pids", "must be at least 8");
  if (l.nproc < 1) return Invalid(path + ".nproc", "must be positive");
  if (l.nofile < 16) return Invalid(path + ".nofile", "must be at least 16");
  if (l.fsize_bytes < 0) return Invalid(path + ".fsize_bytes", "must not be negative");
  if (l.tmpfs_bytes < (1LL << 20)) return Invalid(path + ".tmpfs_bytes", "must be at least 1 MiB");
  if (l.output_bytes < 1024) return Invalid(path + ".output_bytes", "must be at least 1024");
  if (l.cpu_s < 0) return Invalid(path + ".cpu_s", "must not be negative");
  return OkStatus();
}

Status CheckWithin(const Limits& l, const Limits& max, const std::string& path) {
  if (auto field = FirstLimitOver(l, max)) {
    return Invalid(path + ".limits." + std::string(*field),
                   "exceeds max_limits." + std::string(*field));
  }
  return OkStatus();
}

// The names images/build.sh accepts (its --packages and --pip checks say the same): the
// names end up on a shell command line and in image labels.
Status CheckPackages(const PoolConfig& p, const std::string& path) {
  static const std::regex kDebian(R"(^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+:~-]+)?$)");
  static const std::regex kPip(
      R"(^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?([<>=!~]=?[A-Za-z0-9.*+!-]+)?$)");
  auto check = [&](const std::vector<std::string>& names, const char* field,
                   const std::regex& pattern, const char* what) -> Status {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!std::regex_match(names[i], pattern)) {
        return Invalid(path + "." + field + "[" + std::to_string(i) + "]",
                       "\"" + names[i] + "\" is not " + what);
      }
    }
    return OkStatus();
  };
  SANDBOX_RETURN_IF_ERROR(check(p.packages, "packages", kDebian, "a Debian package name"));
  SANDBOX_RETURN_IF_ERROR(check(p.pip_packages, "pip_packages", kPip, "a pip requirement"));
  if ((!p.packages.empty() || !p.pip_packages.empty()) && p.image == PoolConfig{}.image) {
    return Invalid(path + ".image",
                   "a pool with packages needs an image of its own (e.g. "
                   "\"sandbox-mcp-python:" +
                       p.name + "\"), built with images/build.sh --tag");
  }
  return OkStatus();
}

// The host part of tcp://HOST:PORT ("[::1]" for tcp://[::1]:2376), for the loopback check.
std::string TcpHostName(const std::string& host) {
  std::string rest = host.substr(std::string_view("tcp://").size());
  if (!rest.empty() && rest[0] == '[') return rest.substr(0, rest.find(']') + 1);
  return rest.substr(0, rest.rfind(':'));
}

// One engine, shorthand or listed: `where` names it in errors ("docker" for the shorthand,
// "docker.engines[1]"), `host_key` and `tls_key` the keys its host and TLS files came from.
Status CheckEngine(const EngineConfig& e, const std::string& where, const std::string& host_key,
                   const std::string& tls_key) {
  const bool tcp = e.host.rfind("tcp://", 0) == 0;
  if (!tcp && e.host.rfind("unix://", 0) != 0) {
    return Invalid(host_key, "expected unix:///path or tcp://host:port, got \"" + e.host + "\"");
  }
  const bool any_tls = !e.tls_ca.empty() || !e.tls_cert.empty() || !e.tls_key.empty();
  const bool all_tls = !e.tls_ca.empty() && !e.tls_cert.empty() && !e.tls_key.empty();
  if (any_tls && !all_tls) return Invalid(tls_key, "set tls_ca, tls_cert and tls_key together");
  if (any_tls && !tcp) return Invalid(tls_key, "TLS applies to tcp:// engines only");
  // Docker's API is root on the engine's host: beyond loopback only with mutual TLS.
  if (tcp && !all_tls && !IsLoopbackHost(TcpHostName(e.host))) {
    return Invalid(host_key, e.host +
                                 " is beyond loopback: an engine there needs mutual TLS (tls_ca, "
                                 "tls_cert and tls_key)");
  }
  if (!e.seccomp_profile_path.empty() && e.seccomp_profile_path[0] != '/') {
    return Invalid(where + ".seccomp_profile_path",
                   "must be an absolute path on the engine's host");
  }
  return OkStatus();
}

Status CheckEngines(const DockerConfig& d) {
  if (d.engines.empty()) {
    return CheckEngine(EffectiveEngines(d).front(), "docker", "docker.host", "docker.tls_*");
  }
  // Two ways to say one thing (the JSON reader refuses the keys even at their defaults).
  if (d.host != DockerConfig{}.host) {
    return Invalid("docker.host",
                   "set together with docker.engines: list every engine in docker.engines "
                   "(docker.host and docker.tls_* are the one-engine shorthand)");
  }
  if (!d.tls_ca.empty() || !d.tls_cert.empty() || !d.tls_key.empty()) {
    return Invalid("docker.tls_*",
                   "set together with docker.engines: give each engine its own tls_ca, tls_cert "
                   "and tls_key in docker.engines");
  }
  static const std::regex kName("^[a-z0-9-]{1,32}$");
  std::set<std::string> names;
  for (std::size_t i = 0; i < d.engines.size(); ++i) {
    const EngineConfig& e = d.engines[i];
    const std::string where = "docker.engines[" + std::to_string(i) + "]";
    // A metric label value and part of every result: bounded and plain.
    if (!std::regex_match(e.name, kName)) {
      return Invalid(where + ".name",
                     "\"" + e.name + "\" must be 1-32 characters of a-z, 0-9 and -");
    }
    if (!names.insert(e.name).second) {
      return Invalid(where + ".name", "duplicate engine \"" + e.name + "\"");
    }
    SANDBOX_RETURN_IF_ERROR(CheckEngine(e, where, where + ".host", where + ".tls_*"));
  }
  return OkStatus();
}

Status CheckPoolEngines(const PoolConfig& p, const DockerConfig& d, const std::string& path) {
  std::set<std::string> configured;
  std::string listed;
  for (const auto& e : EffectiveEngines(d)) {
    configured.insert(e.name);
    listed += (listed.empty() ? "" : ", ") + e.name;
  }
  std::set<std::string> seen;
  for (std::size_t j = 0; j < p.engines.size(); ++j) {
    const std::string& name = p.engines[j];
    const std::string where = path + ".engines[" + std::to_string(j) + "]";
    if (!configured.contains(name)) {
      return Invalid(where, "no engine named \"" + name + "\" (configured: " + listed + ")");
    }
    if (!seen.insert(name).second) return Invalid(where, "engine \"" + name + "\" listed twice");
  }
  return OkStatus();
}

// A header name as HTTP allows it (a token); the proxy writes it into requests.
bool HeaderToken(const std::string& name) {
  if (name.empty()) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

Status CheckPoolNetwork(const PoolConfig& p, const std::string& path) {
  const NetworkPolicy& n = p.network;
  if (n.mode == NetworkPolicy::Mode::kNone) return OkStatus();
  if (p.runtime == "runsc") {
    return Invalid(path + ".mode", "a network policy is not supported with the gVisor runtime yet");
  }
  if (!n.pip_index_url.empty()) {
    const bool https = n.pip_index_url.starts_with("https://");
    if (!https && !n.pip_index_url.starts_with("http://")) {
      return Invalid(path + ".pip_index_url", "expected an http:// or https:// URL");
    }
    std::string_view rest = std::string_view{n.pip_index_url}.substr(https ? 8 : 7);
    rest = rest.substr(0, rest.find_first_of("/?#"));
    std::uint16_t port = https ? 443 : 80;
    std::string_view host = rest;
    if (const auto colon = rest.rfind(':');
        colon != std::string_view::npos && rest.find(']') == std::string_view::npos) {
      host = rest.substr(0, colon);
      int value = 0;
      for (const char c : rest.substr(colon + 1)) {
        if (c < '0' || c > '9' || value > 65535)
          return Invalid(path + ".pip_index_url", "bad port");
        value = value * 10 + (c - '0');
      }
      if (value < 1 || value > 65535) return Invalid(path + ".pip_index_url", "bad port");
      port = static_cast<std::uint16_t>(value);
    }
    auto name = NormalizeHostName(host);
    if (name.ok()) {
      auto decision = DecideName(n, *name, port);
      if (!decision.allowed) {
        return Invalid(path + ".pip_index_url", "its host is not allowed: " + decision.reason);
      }
    }
  }
  for (std::size_t i = 0; i < n.inject.size(); ++i) {
    const auto& item = n.inject[i];
    const std::string where = path + ".inject[" + std::to_string(i) + "]";
    auto name = NormalizeHostName(item.host);
    if (!name.ok()) return Invalid(where + ".host", name.error().message());
    if (*name != item.host)
      return Invalid(where + ".host", "write it in lower case, no dot at the end");
    if (!DecideName(n, item.host, 443).allowed) {
      return Invalid(where + ".host", "the allowlist does not allow " + item.host + ":443");
    }
    if (!HeaderToken(item.header)) return Invalid(where + ".header", "not a header name");
    if (item.value_env.empty()) return Invalid(where + ".value_env", "names no variable");
  }
  return OkStatus();
}

Status CheckEgress(const EgressConfig& e) {
  auto subnet = ParseNetworkRule(e.subnets);
  if (!subnet.ok() || subnet->kind != NetworkRule::Kind::kCidr || subnet->network.v6 ||
      e.subnets.find(':') != std::string::npos) {
    return Invalid("egress.subnets", "expected an IPv4 CIDR such as 10.213.0.0/16");
  }
  if (subnet->prefix > 24) return Invalid("egress.subnets", "must hold at least one /24");
  if (e.image.empty()) return Invalid("egress.image", "must name an image");
  if (e.upstream_network.empty()) return Invalid("egress.upstream_network", "must name a network");
  return OkStatus();
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  // A dotted quad only: "127.example.com" is a name anyone can point anywhere.
  static const std::regex kLoopbackV4(R"(^127(\.[0-9]{1,3}){3}$)");
  return host == "localhost" || host == "::1" || host == "[::1]" ||
         std::regex_match(host, kLoopbackV4);
}

Status Validate(const Config& config, const HostLimits& host) {
  const auto& s = config.server;
  if (!s.stdio) {
    if (s.listen_host.empty()) return Invalid("server.listen", "the host is empty");
    if (!IsLoopbackHost(s.listen_host) && s.token.empty() && s.tokens.empty()) {
      return Invalid("server.token",
                     "listening on " + s.listen_host +
                         " (beyond loopback) requires a bearer token: set SANDBOX_MCP_TOKEN");
    }
  }
  if (!s.token.empty() && s.token.size() < 16) {
    return Invalid("server.token", "must be at least 16 characters");
  }
  for (const auto& [name, token] : s.tokens) {
    if (name.empty() || name.size() > 64) {
      return Invalid("server.tokens", "token names must be 1-64 characters");
    }
    if (name == "local") return Invalid("server.tokens.local", "\"local\" is reserved");
    if (token.size() < 16)
      return Invalid("server.tokens." + name, "must be at least 16 characters");
    if (token == s.token) return Invalid("server.tokens." + name, "repeats server.token");
  }
  for (const auto& [name, token] : s.admin_tokens) {
    const std::string field = "server.admin_tokens." + name;
    if (name.empty() || name.size() > 64) {
      return Invalid("server.admin_tokens", "token names must be 1-64 characters");
    }
    if (token.size() < 16) return Invalid(field, "must be at least 16 characters");
    // A run token must never open the admin API, nor an admin token the run routes.
    if (token == s.token) return Invalid(field, "equals server.token (a run token)");
    for (const auto& [run_name, run_token] : s.tokens) {
      if (token == run_token) {
        return Invalid(field, "equals server.tokens." + run_name + " (a run token)");
      }
    }
    for (const auto& [other, other_token] : s.admin_tokens) {
      if (other < name && other_token == token) {
        return Invalid(field, "repeats server.admin_tokens." + other);
      }
    }
  }
  if (s.http_threads < 4) return Invalid("server.http_threads", "must be at least 4");
  // Upper bounds of these and the other values that cost threads: CheckUpperBounds (bounds.h).
  if (s.max_streams < 1) return Invalid("server.max_streams", "must be at least 1");
  if (s.max_body_bytes < 1024) return Invalid("server.max_body_bytes", "must be at least 1024");
  if (s.max_mcp_sessions < 1) return Invalid("server.max_mcp_sessions", "must be at least 1");
  if (s.mcp_session_idle_timeout.count() < 1) {
    return Invalid("server.mcp_session_idle_timeout_s", "must be at least 1");
  }
  const auto& pp = config.per_principal;
  if (pp.max_streams < 0 || pp.max_streams > s.max_streams) {
    return Invalid("per_principal.max_streams", "must be 0 (half) to server.max_streams");
  }
  if (pp.max_mcp_sessions < 0 || pp.max_mcp_sessions > s.max_mcp_sessions) {
    return Invalid("per_principal.max_mcp_sessions",
                   "must be 0 (a tenth) to server.max_mcp_sessions");
  }
  if (pp.max_concurrent_runs < 0) {
    return Invalid("per_principal.max_concurrent_runs", "must not be negative (0: no bound)");
  }
  if (pp.runs_per_minute < 0 || pp.runs_per_minute > 1000000) {
    return Invalid("per_principal.runs_per_minute", "must be 0-1000000 (0: no rate limit)");
  }
  // A head must hold the longest request line and header line cpp-httplib accepts (8 KiB).
  if (s.max_header_bytes < 8192 || s.max_header_bytes > 1048576) {
    return Invalid("server.max_header_bytes", "must be 8192-1048576");
  }
  if (s.max_headers < 8 || s.max_headers > 1000) {
    return Invalid("server.max_headers", "must be 8-1000");
  }
  if (s.header_timeout.count() < 1 || s.header_timeout.count() > 300) {
    return Invalid("server.header_timeout_s", "must be 1-300");
  }
  if (s.body_timeout.count() < 1 || s.body_timeout.count() > 3600) {
    return Invalid("server.body_timeout_s", "must be 1-3600");
  }
  if (s.idle_timeout.count() < 1 || s.idle_timeout.count() > 3600) {
    return Invalid("server.idle_timeout_s", "must be 1-3600");
  }
  if (s.max_connections < 1) return Invalid("server.max_connections", "must be at least 1");
  if (s.max_connections_per_ip < 1 || s.max_connections_per_ip > s.max_connections) {
    return Invalid("server.max_connections_per_ip", "must be 1 to server.max_connections");
  }
  if (!s.replica.empty() && !IsReplicaName(s.replica)) {
    return Invalid("server.replica", "expected 1-" + std::to_string(kMaxReplicaNameBytes) +
                                         " lower-case letters or digits (e.g. \"r1\"), got \"" +
                                         s.replica + "\"");
  }
  SANDBOX_RETURN_IF_ERROR(CheckEngines(config.docker));
  if (config.docker.call_timeout.count() <= 0) {
    return Invalid("docker.call_timeout_ms", "must be positive");
  }
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "off"};
  if (!kLevels.contains(config.log_level)) {
    return Invalid("log_level", "expected one of trace, debug, info, warn, error, off");
  }
  if (config.log_format != "text" && config.log_format != "json") {
    return Invalid("log_format", "expected text or json");
  }
  if (config.instance_id.empty() || config.instance_id.size() > 63) {
    return Invalid("instance_id", "must be 1-63 characters");
  }
  const auto& ss = config.sessions;
  if (ss.max_total < 0) return Invalid("sessions.max_total", "must not be negative");
  if (ss.max_per_principal < 1) return Invalid("sessions.max_per_principal", "must be at least 1");
  if (ss.idle_timeout.count() < 1) return Invalid("sessions.idle_timeout_s", "must be at least 1");
  if (ss.max_lifetime < ss.idle_timeout) {
    return Invalid("sessions.max_lifetime_s", "must be at least sessions.idle_timeout_s");
  }
  if (ss.warm < 0 || ss.warm > ss.max_total) {
    return Invalid("sessions.warm", "must be between 0 and sessions.max_total");
  }
  if (ss.max_file_bytes < 1) return Invalid("sessions.max_file_bytes", "must be positive");
  if (ss.max_upload_bytes < ss.max_file_bytes) {
    return Invalid("sessions.max_upload_bytes", "must be at least sessions.max_file_bytes");
  }
  if (ss.busy_wait.count() < 0) return Invalid("sessions.busy_wait_ms", "must not be negative");
  if (ss.restart_grace.count() < 0 || ss.restart_grace > std::chrono::hours(24)) {
    return Invalid("sessions.restart_grace_s", "must be between 0 (off) and 86400");
  }
  const auto& t = config.tasks;
  if (t.ttl.count() < 1 || t.ttl > std::chrono::hours(24 * 7)) {
    return Invalid("tasks.ttl_s", "must be between 1 and 604800 (a week)");
  }
  if (t.poll_interval.count() < 1) return Invalid("tasks.poll_interval_ms", "must be positive");
  if (t.max_running < 1) return Invalid("tasks.max_running", "must be at least 1");
  if (t.max_running_per_principal < 1 || t.max_running_per_principal > t.max_running) {
    return Invalid("tasks.max_running_per_principal", "must be between 1 and tasks.max_running");
  }
  if (t.max_per_principal < t.max_running_per_principal) {
    return Invalid("tasks.max_per_principal", "must be at least tasks.max_running_per_principal");
  }
  if (t.live_output_bytes < 1024)
    return Invalid("tasks.live_output_bytes", "must be at least 1024");
  if (t.max_result_bytes < (1LL << 20) || t.max_result_bytes > (1LL << 40)) {
    return Invalid("tasks.max_result_bytes", "must be between 1 MiB and 1 TiB");
  }
  if (t.max_result_bytes_per_principal < (1LL << 20) ||
      t.max_result_bytes_per_principal > t.max_result_bytes) {
    return Invalid("tasks.max_result_bytes_per_principal",
                   "must be between 1 MiB and tasks.max_result_bytes");
  }
  const auto& m = config.memory;
  // At least 64 MiB, and room for one request body of the largest size accepted.
  if (m.inflight_bytes != 0 &&
      (m.inflight_bytes < (64LL << 20) || m.inflight_bytes < config.server.max_body_bytes)) {
    return Invalid("memory.inflight_bytes",
                   "must be 0 (derived from the machine) or at least 64 MiB and "
                   "server.max_body_bytes");
  }
  if (m.inflight_wait.count() < 0 || m.inflight_wait > std::chrono::minutes(5)) {
    return Invalid("memory.inflight_wait_ms", "must be between 0 and 300000");
  }
  if (m.stream_queue_bytes < (64LL << 10) || m.stream_queue_bytes > (256LL << 20) ||
      (m.inflight_bytes != 0 && m.stream_queue_bytes > m.inflight_bytes)) {
    return Invalid("memory.stream_queue_bytes",
                   "must be between 64 KiB and 256 MiB, and at most memory.inflight_bytes");
  }
  const auto& o = config.output;
  if (o.max_figures < 0) return Invalid("output.max_figures", "must not be negative");
  if (o.max_figure_px < 16) return Invalid("output.max_figure_px", "must be at least 16");
  // Upper bounds: a figure travels as one harness frame, and every answer's bytes come out of
  // memory.inflight_bytes (docs/memory-budget.md).
  if (o.max_figure_bytes < 1024 || o.max_figure_bytes > (64LL << 20)) {
    return Invalid("output.max_figure_bytes", "must be between 1024 and 67108864 (64 MiB)");
  }
  if (o.max_figures_bytes < o.max_figure_bytes || o.max_figures_bytes > (256LL << 20)) {
    return Invalid("output.max_figures_bytes",
                   "must be at least output.max_figure_bytes and at most 268435456 (256 MiB)");
  }
  if (o.figure_dpi < 10 || o.figure_dpi > 600)
    return Invalid("output.figure_dpi", "must be 10-600");
  if (o.max_files < 0) return Invalid("output.max_files", "must not be negative");
  if (o.max_files_bytes < 0) return Invalid("output.max_files_bytes", "must not be negative");
  if (config.pools.empty()) return Invalid("pools", "at least one pool is required");
  std::set<std::string> names;
  std::map<std::string, std::string> executables;  // path -> pool
  for (std::size_t i = 0; i < config.pools.size(); ++i) {
    const auto& p = config.pools[i];
    std::string path = "pools[" + std::to_string(i) + "]";
    if (p.name.empty()) return Invalid(path + ".name", "must not be empty");
    if (!names.insert(p.name).second)
      return Invalid(path + ".name", "duplicate pool \"" + p.name + "\"");
    if (p.image.empty()) return Invalid(path + ".image", "must not be empty");
    if (p.python.empty() || p.python[0] != '/')
      return Invalid(path + ".python", "must be an absolute path");
    for (std::size_t j = 0; j < p.executables.size(); ++j) {
      const std::string& e = p.executables[j];
      const std::string where = path + ".executables[" + std::to_string(j) + "]";
      if (e.empty() || e[0] != '/') return Invalid(where, "must be an absolute path");
      auto [it, fresh] = executables.emplace(e, p.name);
      if (!fresh && it->second != p.name) {
        return Invalid(where, "\"" + e + "\" is already served by pool \"" + it->second + "\"");
      }
    }
    SANDBOX_RETURN_IF_ERROR(CheckPackages(p, path));
    SANDBOX_RETURN_IF_ERROR(ValidatePoolSizes(p, path));
    if (p.acquire_timeout.count() <= 0)
      return Invalid(path + ".acquire_timeout_ms", "must be positive");
    if (p.max_age.count() <= 0) return Invalid(path + ".max_age_s", "must be positive");
    if (p.max_runs < 1) return Invalid(path + ".max_runs", "must be at least 1");
    if (p.skip_preload_when_queued && p.mode != PoolMode::kFresh) {
      // A recycle container started lean would serve its many runs without the preload.
      return Invalid(path + ".skip_preload_when_queued", "applies to fresh pools only");
    }
    if (p.zygote_memory_bytes < (64LL << 20)) {
      return Invalid(path + ".zygote_memory_bytes", "must be at least 64 MiB");
    }
    SANDBOX_RETURN_IF_ERROR(CheckLimits(p.max_limits, path + ".max_limits"));
    SANDBOX_RETURN_IF_ERROR(ValidatePoolLimits(p.limits, p.max_limits, path));
    SANDBOX_RETURN_IF_ERROR(CheckPoolEngines(p, config.docker, path));
    SANDBOX_RETURN_IF_ERROR(CheckPoolNetwork(p, path + ".network"));
  }
  SANDBOX_RETURN_IF_ERROR(CheckEgress(config.egress));
  for (std::size_t i = 0; i < config.pools.size(); ++i) {
    if (config.pools[i].network.inject.empty()) continue;
    if (config.egress.ca_cert_file.empty() || config.egress.ca_key_file.empty()) {
      return Invalid("pools[" + std::to_string(i) + "].network.inject",
                     "credentials need the deployment CA: set egress.ca_cert_file and "
                     "egress.ca_key_file (docs/network.md, \"Credentials\")");
    }
  }
  if (config.egress.ca_cert_file.empty() != config.egress.ca_key_file.empty()) {
    return Invalid(
        config.egress.ca_cert_file.empty() ? "egress.ca_cert_file" : "egress.ca_key_file",
        "set both the certificate and the key, or neither");
  }
  if (FindPool(config, config.default_pool) == nullptr) {
    return Invalid("default_pool", "no pool named \"" + config.default_pool + "\"");
  }
  return CheckUpperBounds(config, host);
}

Status ValidatePoolNetwork(const PoolConfig& pool, const std::string& path) {
  return CheckPoolNetwork(pool, path);
}

Status ValidatePoolSizes(const PoolConfig& p, const std::string& path) {
  if (p.min_idle < 0) return Invalid(path + ".min_idle", "must not be negative");
  if (p.max_total < 1) return Invalid(path + ".max_total", "must be at least 1");
  if (p.min_idle > p.max_total) return Invalid(path + ".min_idle", "must not exceed max_total");
  if (p.max_concurrent_starts < 1)
    return Invalid(path + ".max_concurrent_starts", "must be at least 1");
  SANDBOX_RETURN_IF_ERROR(CheckPoolUpperBounds(p, path));
  return ValidateAutoscale(p.autoscale, p.max_total, path);
}

Status ValidatePoolLimits(const Limits& limits, const Limits& max_limits, const std::string& path) {
  SANDBOX_RETURN_IF_ERROR(CheckLimits(limits, path + ".limits"));
  return CheckWithin(limits, max_limits, path);
}

Status ValidateAutoscale(const AutoscaleConfig& a, int max_total, const std::string& path) {
  const std::string at = path + ".autoscale";
  if (a.min_idle_floor < 0) return Invalid(at + ".min_idle_floor", "must not be negative");
  if (a.min_idle_ceiling < 0) {
    return Invalid(at + ".min_idle_ceiling", "must not be negative (0: max_total)");
  }
  if (a.min_idle_ceiling > max_total) {
    return Invalid(at + ".min_idle_ceiling", "must not exceed max_total");
  }
  const int ceiling = a.min_idle_ceiling == 0 ? max_total : a.min_idle_ceiling;
  if (a.min_idle_floor > ceiling) {
    return Invalid(at + ".min_idle_floor", "must not exceed min_idle_ceiling (or max_total)");
  }
  if (a.headroom < 0 || a.headroom > max_total) {
    return Invalid(at + ".headroom", "must be 0 to max_total");
  }
  if (a.window.count() < 1 || a.window.count() > 86400) {
    return Invalid(at + ".window_s", "must be 1-86400");
  }
  return OkStatus();
}

std::int64_t InflightBytes(const Config& config, std::int64_t machine_bytes) {
  if (config.memory.inflight_bytes > 0) return config.memory.inflight_bytes;
  constexpr std::int64_t kFloor = 256LL << 20;
  constexpr std::int64_t kCeiling = 8LL << 30;
  // A quarter leaves the rest to the process itself, the kernel and, on a shared host, the
  // sandboxes; the ceiling because past it an answer's size, not memory, is the limit.
  const std::int64_t derived = std::clamp(machine_bytes / 4, kFloor, kCeiling);
  return std::max(derived, config.server.max_body_bytes);
}

}  // namespace sandbox::config
