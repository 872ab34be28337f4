#include "sandbox/config/config.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "sandbox/core/json.h"

namespace sandbox::config {
namespace {

using nlohmann::json;

Error Invalid(const std::string& path, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, "configuration " + path + ": " + what);
}

// Reads one JSON object field by field; remembers which keys were used so leftovers
// (typos) are reported.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  Status Check() const {
    if (!object_.is_object()) return Invalid(path_, "expected an object");
    return OkStatus();
  }

  template <typename T>
  Status Read(const char* key, T& out) {
    used_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end()) return OkStatus();
    return Convert(*it, Child(key), out);
  }

  // Reads a nested object with `fn(const json&, std::string path)`.
  template <typename Fn>
  Status ReadObject(const char* key, Fn&& fn) {
    used_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end()) return OkStatus();
    return fn(*it, Child(key));
  }

  Status RejectUnknown() const {
    for (const auto& item : object_.items()) {
      if (!used_.contains(item.key())) return Invalid(Child(item.key()), "unknown key");
    }
    return OkStatus();
  }

  std::string Child(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

 private:
  static Status Convert(const json& v, const std::string& path, std::string& out) {
    if (!v.is_string()) return Invalid(path, "expected a string");
    out = v.get<std::string>();
    return OkStatus();
  }
  static Status Convert(const json& v, const std::string& path, bool& out) {
    if (!v.is_boolean()) return Invalid(path, "expected true or false");
    out = v.get<bool>();
    return OkStatus();
  }
  static Status Convert(const json& v, const std::string& path, double& out) {
    if (!v.is_number()) return Invalid(path, "expected a number");
    out = v.get<double>();
    return OkStatus();
  }
  static Status Convert(const json& v, const std::string& path, std::int64_t& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    out = v.get<std::int64_t>();
    return OkStatus();
  }
  static Status Convert(const json& v, const std::string& path, int& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    auto wide = v.get<std::int64_t>();
    if (wide < INT32_MIN || wide > INT32_MAX) return Invalid(path, "out of range");
    out = static_cast<int>(wide);
    return OkStatus();
  }
  static Status Convert(const json& v, const std::string& path, std::uint16_t& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    auto wide = v.get<std::int64_t>();
    if (wide < 0 || wide > 65535) return Invalid(path, "expected a port number (0-65535)");
    out = static_cast<std::uint16_t>(wide);
    return OkStatus();
  }
  static Status Convert(const json& v, const std::string& path,
                        std::map<std::string, std::string>& out) {
    if (!v.is_object()) return Invalid(path, "expected an object of strings");
    out.clear();
    for (const auto& [key, item] : v.items()) {
      if (!item.is_string()) return Invalid(path + "." + key, "expected a string");
      out[key] = item.get<std::string>();
    }
    return OkStatus();
  }
  static Status Convert(const json& v, const std::string& path, std::vector<std::string>& out) {
    if (!v.is_array()) return Invalid(path, "expected an array of strings");
    out.clear();
    for (const auto& item : v) {
      if (!item.is_string()) return Invalid(path, "expected an array of strings");
      out.push_back(item.get<std::string>());
    }
    return OkStatus();
  }
  template <typename Rep, typename Period>
  static Status Convert(const json& v, const std::string& path,
                        std::chrono::duration<Rep, Period>& out) {
    if (!v.is_number_integer()) return Invalid(path, "expected an integer");
    out = std::chrono::duration<Rep, Period>(v.get<Rep>());
    return OkStatus();
  }

  const json& object_;
  std::string path_;
  std::set<std::string> used_;
};

Status ApplyLimits(const json& doc, const std::string& path, Limits& limits) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("timeout_s", limits.timeout_s));
  SANDBOX_RETURN_IF_ERROR(r.Read("memory_bytes", limits.memory_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("cpus", limits.cpus));
  SANDBOX_RETURN_IF_ERROR(r.Read("pids", limits.pids));
  SANDBOX_RETURN_IF_ERROR(r.Read("nproc", limits.nproc));
  SANDBOX_RETURN_IF_ERROR(r.Read("nofile", limits.nofile));
  SANDBOX_RETURN_IF_ERROR(r.Read("fsize_bytes", limits.fsize_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("tmpfs_bytes", limits.tmpfs_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("output_bytes", limits.output_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("cpu_s", limits.cpu_s));
  return r.RejectUnknown();
}

Status ApplyAutoscale(const json& doc, const std::string& path, AutoscaleConfig& autoscale) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("enabled", autoscale.enabled));
  SANDBOX_RETURN_IF_ERROR(r.Read("min_idle_floor", autoscale.min_idle_floor));
  SANDBOX_RETURN_IF_ERROR(r.Read("min_idle_ceiling", autoscale.min_idle_ceiling));
  SANDBOX_RETURN_IF_ERROR(r.Read("headroom", autoscale.headroom));
  SANDBOX_RETURN_IF_ERROR(r.Read("window_s", autoscale.window));
  return r.RejectUnknown();
}

Status ApplyPool(const json& doc, const std::string& path, PoolConfig& pool) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("name", pool.name));
  std::string mode(PoolModeName(pool.mode));
  SANDBOX_RETURN_IF_ERROR(r.Read("mode", mode));
  if (mode == "recycle") {
    pool.mode = PoolMode::kRecycle;
  } else if (mode == "fresh") {
    pool.mode = PoolMode::kFresh;
  } else {
    return Invalid(r.Child("mode"), "expected \"recycle\" or \"fresh\", got \"" + mode + "\"");
  }
  SANDBOX_RETURN_IF_ERROR(r.Read("image", pool.image));
  SANDBOX_RETURN_IF_ERROR(r.Read("python", pool.python));
  SANDBOX_RETURN_IF_ERROR(r.Read("executables", pool.executables));
  SANDBOX_RETURN_IF_ERROR(r.Read("runtime", pool.runtime));
  SANDBOX_RETURN_IF_ERROR(r.Read("packages", pool.packages));
  SANDBOX_RETURN_IF_ERROR(r.Read("pip_packages", pool.pip_packages));
  SANDBOX_RETURN_IF_ERROR(r.Read("preload", pool.preload));
  SANDBOX_RETURN_IF_ERROR(r.Read("warm_plot", pool.warm_plot));
  pool.skip_preload_when_queued = pool.mode == PoolMode::kFresh;  // the default follows the mode
  SANDBOX_RETURN_IF_ERROR(r.Read("skip_preload_when_queued", pool.skip_preload_when_queued));
  pool.refill_after_run = pool.mode == PoolMode::kFresh;
  SANDBOX_RETURN_IF_ERROR(r.Read("refill_after_run", pool.refill_after_run));
  SANDBOX_RETURN_IF_ERROR(r.Read("min_idle", pool.min_idle));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_total", pool.max_total));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_concurrent_starts", pool.max_concurrent_starts));
  SANDBOX_RETURN_IF_ERROR(r.Read("acquire_timeout_ms", pool.acquire_timeout));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_age_s", pool.max_age));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_runs", pool.max_runs));
  SANDBOX_RETURN_IF_ERROR(r.Read("zygote_memory_bytes", pool.zygote_memory_bytes));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("limits", [&](const json& v, const std::string& p) {
    return ApplyLimits(v, p, pool.limits);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("max_limits", [&](const json& v, const std::string& p) {
    return ApplyLimits(v, p, pool.max_limits);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("autoscale", [&](const json& v, const std::string& p) {
    return ApplyAutoscale(v, p, pool.autoscale);
  }));
  return r.RejectUnknown();
}

Status ApplyServer(const json& doc, const std::string& path, ServerConfig& server) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  std::string listen;
  SANDBOX_RETURN_IF_ERROR(r.Read("listen", listen));
  if (!listen.empty()) {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return Invalid(r.Child("listen"), "expected HOST:PORT");
    server.listen_host = listen.substr(0, colon);
    try {
      auto port = std::stoi(listen.substr(colon + 1));
      if (port < 0 || port > 65535) throw std::out_of_range("port");
      server.listen_port = static_cast<std::uint16_t>(port);
    } catch (const std::exception&) {
      return Invalid(r.Child("listen"), "expected HOST:PORT");
    }
  }
  SANDBOX_RETURN_IF_ERROR(r.Read("token", server.token));
  SANDBOX_RETURN_IF_ERROR(r.Read("tokens", server.tokens));
  SANDBOX_RETURN_IF_ERROR(r.Read("admin_tokens", server.admin_tokens));
  SANDBOX_RETURN_IF_ERROR(r.Read("http_threads", server.http_threads));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_streams", server.max_streams));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_mcp_sessions", server.max_mcp_sessions));
  SANDBOX_RETURN_IF_ERROR(r.Read("mcp_session_idle_timeout_s", server.mcp_session_idle_timeout));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_body_bytes", server.max_body_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_header_bytes", server.max_header_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_headers", server.max_headers));
  SANDBOX_RETURN_IF_ERROR(r.Read("header_timeout_s", server.header_timeout));
  SANDBOX_RETURN_IF_ERROR(r.Read("body_timeout_s", server.body_timeout));
  SANDBOX_RETURN_IF_ERROR(r.Read("idle_timeout_s", server.idle_timeout));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_connections", server.max_connections));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_connections_per_ip", server.max_connections_per_ip));
  SANDBOX_RETURN_IF_ERROR(r.Read("allowed_origins", server.allowed_origins));
  SANDBOX_RETURN_IF_ERROR(r.Read("allowed_hosts", server.allowed_hosts));
  return r.RejectUnknown();
}

Status ApplySessions(const json& doc, const std::string& path, SessionConfig& sessions) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("enabled", sessions.enabled));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_total", sessions.max_total));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_per_principal", sessions.max_per_principal));
  SANDBOX_RETURN_IF_ERROR(r.Read("idle_timeout_s", sessions.idle_timeout));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_lifetime_s", sessions.max_lifetime));
  SANDBOX_RETURN_IF_ERROR(r.Read("warm", sessions.warm));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_file_bytes", sessions.max_file_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_upload_bytes", sessions.max_upload_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("busy_wait_ms", sessions.busy_wait));
  SANDBOX_RETURN_IF_ERROR(r.Read("restart_grace_s", sessions.restart_grace));
  return r.RejectUnknown();
}

Status ApplyPerPrincipal(const json& doc, const std::string& path, PrincipalLimits& limits) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("max_streams", limits.max_streams));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_mcp_sessions", limits.max_mcp_sessions));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_concurrent_runs", limits.max_concurrent_runs));
  SANDBOX_RETURN_IF_ERROR(r.Read("runs_per_minute", limits.runs_per_minute));
  return r.RejectUnknown();
}

Status ApplyDocker(const json& doc, const std::string& path, DockerConfig& docker) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("host", docker.host));
  SANDBOX_RETURN_IF_ERROR(r.Read("tls_ca", docker.tls_ca));
  SANDBOX_RETURN_IF_ERROR(r.Read("tls_cert", docker.tls_cert));
  SANDBOX_RETURN_IF_ERROR(r.Read("tls_key", docker.tls_key));
  SANDBOX_RETURN_IF_ERROR(r.Read("call_timeout_ms", docker.call_timeout));
  return r.RejectUnknown();
}

Status ApplyOutput(const json& doc, const std::string& path, OutputOptions& output) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("max_figures", output.max_figures));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_figure_px", output.max_figure_px));
  SANDBOX_RETURN_IF_ERROR(r.Read("figure_dpi", output.figure_dpi));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_files", output.max_files));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_files_bytes", output.max_files_bytes));
  return r.RejectUnknown();
}

Status ApplyPolicy(const json& doc, const std::string& path, PolicyConfig& policy) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("container_seccomp", policy.container_seccomp));
  SANDBOX_RETURN_IF_ERROR(r.Read("run_seccomp", policy.run_seccomp));
  return r.RejectUnknown();
}

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
  auto over = [&](const char* field) {
    return Invalid(path + ".limits." + field, "exceeds max_limits." + std::string(field));
  };
  if (l.timeout_s > max.timeout_s) return over("timeout_s");
  if (l.memory_bytes > max.memory_bytes) return over("memory_bytes");
  if (l.cpus > max.cpus) return over("cpus");
  if (l.pids > max.pids) return over("pids");
  if (l.nproc > max.nproc) return over("nproc");
  if (l.nofile > max.nofile) return over("nofile");
  if (l.fsize_bytes > max.fsize_bytes) return over("fsize_bytes");
  if (l.tmpfs_bytes > max.tmpfs_bytes) return over("tmpfs_bytes");
  if (l.output_bytes > max.output_bytes) return over("output_bytes");
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

}  // namespace

json LimitsJson(const Limits& l) {
  return json{{"timeout_s", l.timeout_s},
              {"memory_bytes", l.memory_bytes},
              {"cpus", l.cpus},
              {"pids", l.pids},
              {"nproc", l.nproc},
              {"nofile", l.nofile},
              {"fsize_bytes", l.fsize_bytes},
              {"tmpfs_bytes", l.tmpfs_bytes},
              {"output_bytes", l.output_bytes},
              {"cpu_s", l.cpu_s}};
}

Status ApplyLimitsJson(const json& doc, const std::string& path, Limits& out) {
  return ApplyLimits(doc, path, out);
}

Status ApplyAutoscaleJson(const json& doc, const std::string& path, AutoscaleConfig& out) {
  return ApplyAutoscale(doc, path, out);
}

std::string_view PoolModeName(PoolMode mode) {
  return mode == PoolMode::kRecycle ? "recycle" : "fresh";
}

int PrincipalCount(const Config& config) {
  const int named = static_cast<int>(config.server.tokens.size());
  return std::max(1, named + (config.server.token.empty() ? 0 : 1));
}

namespace {

// One principal's share of a server-wide bound: the configured share, else bound / divisor;
// the whole bound while only one principal exists (there is nobody to starve).
int ShareOf(const Config& config, int configured, int bound, int divisor) {
  if (PrincipalCount(config) == 1) return bound;
  return configured > 0 ? configured : std::max(1, bound / divisor);
}

}  // namespace

int StreamsPerPrincipal(const Config& config) {
  return ShareOf(config, config.per_principal.max_streams, config.server.max_streams, 2);
}

int McpSessionsPerPrincipal(const Config& config) {
  return ShareOf(config, config.per_principal.max_mcp_sessions, config.server.max_mcp_sessions, 10);
}

Result<Config> ApplyJson(Config base, const json& doc) {
  ObjectReader r(doc, "");
  if (!doc.is_object()) return Invalid("(top level)", "expected an object");
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("server", [&](const json& v, const std::string& p) {
    return ApplyServer(v, p, base.server);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("docker", [&](const json& v, const std::string& p) {
    return ApplyDocker(v, p, base.docker);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("sessions", [&](const json& v, const std::string& p) {
    return ApplySessions(v, p, base.sessions);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("per_principal", [&](const json& v, const std::string& p) {
    return ApplyPerPrincipal(v, p, base.per_principal);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("policy", [&](const json& v, const std::string& p) {
    return ApplyPolicy(v, p, base.policy);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("output", [&](const json& v, const std::string& p) {
    return ApplyOutput(v, p, base.output);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("pools", [&](const json& v, const std::string& p) -> Status {
    if (!v.is_array()) return Invalid(p, "expected an array of pool objects");
    base.pools.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
      PoolConfig pool;
      SANDBOX_RETURN_IF_ERROR(ApplyPool(v[i], p + "[" + std::to_string(i) + "]", pool));
      base.pools.push_back(std::move(pool));
    }
    return OkStatus();
  }));
  SANDBOX_RETURN_IF_ERROR(r.Read("default_pool", base.default_pool));
  SANDBOX_RETURN_IF_ERROR(r.Read("log_level", base.log_level));
  SANDBOX_RETURN_IF_ERROR(r.Read("log_format", base.log_format));
  SANDBOX_RETURN_IF_ERROR(r.Read("log_run_code", base.log_run_code));
  SANDBOX_RETURN_IF_ERROR(r.Read("instance_id", base.instance_id));
  SANDBOX_RETURN_IF_ERROR(r.RejectUnknown());
  return base;
}

Result<CommandLine> ParseCommandLine(int argc, const char* const* argv,
                                     const std::map<std::string, std::string>& env) {
  CommandLine out;
  std::optional<std::string> listen;
  std::optional<std::string> config_file;
  std::optional<std::string> log_level;
  std::optional<std::string> log_format;
  std::optional<std::string> instance_id;
  auto usage = [](const std::string& what) {
    return Error(ErrorCode::kInvalidArgument, what + " (see --help)");
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> Result<std::string> {
      if (i + 1 >= argc) return usage(std::string(flag) + " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--help" || arg == "-h") {
      out.help = true;
    } else if (arg == "--version") {
      out.version = true;
    } else if (arg == "--stdio") {
      out.config.server.stdio = true;
    } else if (arg == "--listen") {
      auto v = value("--listen");
      if (!v.ok()) return v.error();
      listen = *v;
    } else if (arg == "--config") {
      auto v = value("--config");
      if (!v.ok()) return v.error();
      config_file = *v;
    } else if (arg == "--log-level") {
      auto v = value("--log-level");
      if (!v.ok()) return v.error();
      log_level = *v;
    } else if (arg == "--log-format") {
      auto v = value("--log-format");
      if (!v.ok()) return v.error();
      log_format = *v;
    } else if (arg == "--instance-id") {
      auto v = value("--instance-id");
      if (!v.ok()) return v.error();
      instance_id = *v;
    } else {
      return usage("unknown argument \"" + arg + "\"");
    }
  }
  if (config_file) {
    std::ifstream in(*config_file);
    if (!in) {
      return Error(ErrorCode::kInvalidArgument, "cannot read configuration file " + *config_file);
    }
    std::stringstream text;
    text << in.rdbuf();
    auto doc = ParseJson(text.str(), {.max_depth = kMaxJsonDepth, .allow_comments = true});
    if (!doc.ok()) {
      return Error(ErrorCode::kInvalidArgument,
                   "configuration file " + *config_file + ": " + doc.error().message());
    }
    auto applied = ApplyJson(std::move(out.config), *doc);
    if (!applied.ok()) return applied.error().WithContext(*config_file);
    out.config = std::move(*applied);
  }
  // The command line and the environment override the file.
  if (listen) {
    auto applied = ApplyJson(std::move(out.config), json{{"server", {{"listen", *listen}}}});
    if (!applied.ok()) return applied.error();
    out.config = std::move(*applied);
  }
  if (log_level) out.config.log_level = *log_level;
  if (log_format) out.config.log_format = *log_format;
  if (instance_id) out.config.instance_id = *instance_id;
  if (auto it = env.find("SANDBOX_MCP_TOKEN"); it != env.end() && !it->second.empty()) {
    out.config.server.token = it->second;
  }
  return out;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

const PoolConfig* FindPool(const Config& config, const std::string& name) {
  for (const auto& pool : config.pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

Status Validate(const Config& config) {
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
  // Each slot costs a thread for the server's life.
  if (s.max_streams < 1 || s.max_streams > 4096) {
    return Invalid("server.max_streams", "must be 1-4096");
  }
  if (s.max_body_bytes < 1024) return Invalid("server.max_body_bytes", "must be at least 1024");
  if (s.max_mcp_sessions < 1 || s.max_mcp_sessions > 1000000) {
    return Invalid("server.max_mcp_sessions", "must be 1-1000000");
  }
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
  // Each connection costs a descriptor, and up to two more while a request is served.
  if (s.max_connections < 1 || s.max_connections > 100000) {
    return Invalid("server.max_connections", "must be 1-100000");
  }
  if (s.max_connections_per_ip < 1 || s.max_connections_per_ip > s.max_connections) {
    return Invalid("server.max_connections_per_ip", "must be 1 to server.max_connections");
  }
  const auto& d = config.docker;
  if (d.host.rfind("unix://", 0) != 0 && d.host.rfind("tcp://", 0) != 0) {
    return Invalid("docker.host", "expected unix:///path or tcp://host:port");
  }
  bool any_tls = !d.tls_ca.empty() || !d.tls_cert.empty() || !d.tls_key.empty();
  bool all_tls = !d.tls_ca.empty() && !d.tls_cert.empty() && !d.tls_key.empty();
  if (any_tls && !all_tls)
    return Invalid("docker.tls_*", "set tls_ca, tls_cert and tls_key together");
  if (d.call_timeout.count() <= 0) return Invalid("docker.call_timeout_ms", "must be positive");
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
  const auto& o = config.output;
  if (o.max_figures < 0) return Invalid("output.max_figures", "must not be negative");
  if (o.max_figure_px < 16) return Invalid("output.max_figure_px", "must be at least 16");
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
  }
  if (FindPool(config, config.default_pool) == nullptr) {
    return Invalid("default_pool", "no pool named \"" + config.default_pool + "\"");
  }
  return OkStatus();
}

Status ValidatePoolSizes(const PoolConfig& p, const std::string& path) {
  if (p.min_idle < 0) return Invalid(path + ".min_idle", "must not be negative");
  if (p.max_total < 1) return Invalid(path + ".max_total", "must be at least 1");
  if (p.min_idle > p.max_total) return Invalid(path + ".min_idle", "must not exceed max_total");
  if (p.max_concurrent_starts < 1)
    return Invalid(path + ".max_concurrent_starts", "must be at least 1");
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

std::string UsageText() {
  return R"(usage: sandbox-mcp [--listen HOST:PORT] [--stdio] [--config FILE] [--log-level LEVEL]
                   [--log-format text|json] [--instance-id ID]

Runs untrusted Python for MCP clients in locked-down, pre-warmed Docker containers.

  --listen HOST:PORT  HTTP address (default 127.0.0.1:8080); beyond loopback a token is required
  --stdio             speak MCP over stdin/stdout instead of HTTP
  --config FILE       JSON configuration (see README, "Configuration")
  --log-level LEVEL   trace, debug, info (default), warn, error, off
  --log-format FORMAT text (default) or json: one JSON object per log line
  --instance-id ID    label of this server's containers (default "default"); a server
                      starting removes the containers of its instance id whose owning
                      server process is gone, never those of a live server
  --version           print the version and exit

Environment: SANDBOX_MCP_TOKEN  bearer token clients must send (Authorization: Bearer ...)
)";
}

}  // namespace sandbox::config
