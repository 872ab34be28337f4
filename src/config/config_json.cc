// The configuration's JSON: each section read field by field onto a Config (unknown keys
// refused), and the JSON of limits.
#include <string>
#include <utility>

#include "object_reader.h"
#include "sandbox/config/config.h"

namespace sandbox::config {
namespace {

using detail::Invalid;
using detail::ObjectReader;
using nlohmann::json;

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

Status ApplyNetworkRules(const std::vector<std::string>& entries, const std::string& path,
                         std::vector<NetworkRule>& rules) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto rule = ParseNetworkRule(entries[i]);
    if (!rule.ok()) return Invalid(path + "[" + std::to_string(i) + "]", rule.error().message());
    rules.push_back(std::move(*rule));
  }
  return OkStatus();
}

Status ApplyInjection(const json& doc, const std::string& path, CredentialInjection& item) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("host", item.host));
  SANDBOX_RETURN_IF_ERROR(r.Read("header", item.header));
  SANDBOX_RETURN_IF_ERROR(r.Read("value_env", item.value_env));
  return r.RejectUnknown();
}

Status ApplyNetwork(const json& doc, const std::string& path, NetworkPolicy& network) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  std::string mode = "none";
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  std::string pip_index_url;
  std::vector<CredentialInjection> inject;
  SANDBOX_RETURN_IF_ERROR(r.Read("mode", mode));
  SANDBOX_RETURN_IF_ERROR(r.Read("allow", allow));
  SANDBOX_RETURN_IF_ERROR(r.Read("deny", deny));
  SANDBOX_RETURN_IF_ERROR(r.Read("pip_index_url", pip_index_url));
  SANDBOX_RETURN_IF_ERROR(
      r.ReadObject("inject", [&](const json& v, const std::string& p) -> Status {
        if (!v.is_array()) return Invalid(p, "expected an array of {host, header, value_env}");
        for (std::size_t i = 0; i < v.size(); ++i) {
          CredentialInjection item;
          SANDBOX_RETURN_IF_ERROR(ApplyInjection(v[i], p + "[" + std::to_string(i) + "]", item));
          inject.push_back(std::move(item));
        }
        return OkStatus();
      }));
  SANDBOX_RETURN_IF_ERROR(r.RejectUnknown());
  network = NetworkPolicy{};
  network.pip_index_url = pip_index_url;
  network.inject = std::move(inject);
  if (mode == "none") {
    if (!allow.empty() || !deny.empty() || !pip_index_url.empty() || !network.inject.empty()) {
      return Invalid(r.Child(allow.empty() ? "deny" : "allow"),
                     "entries need \"mode\": \"allowlist\" (mode \"none\" is no network at all)");
    }
    return OkStatus();
  }
  if (mode != "allowlist") return Invalid(r.Child("mode"), "expected \"none\" or \"allowlist\"");
  network.mode = NetworkPolicy::Mode::kAllowlist;
  if (allow.empty()) {
    return Invalid(r.Child("allow"),
                   "an allowlist needs at least one entry (mode \"none\" turns the network off)");
  }
  SANDBOX_RETURN_IF_ERROR(ApplyNetworkRules(allow, r.Child("allow"), network.allow));
  return ApplyNetworkRules(deny, r.Child("deny"), network.deny);
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
  SANDBOX_RETURN_IF_ERROR(r.Read("interactive_input", pool.interactive_input));
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
  SANDBOX_RETURN_IF_ERROR(r.Read("engines", pool.engines));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("network", [&](const json& v, const std::string& p) {
    return ApplyNetwork(v, p, pool.network);
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
  SANDBOX_RETURN_IF_ERROR(r.Read("replica", server.replica));
  SANDBOX_RETURN_IF_ERROR(r.Read("request_state_key_file", server.request_state_key_file));
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

Status ApplyMemory(const json& doc, const std::string& path, MemoryConfig& memory) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("inflight_bytes", memory.inflight_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("inflight_wait_ms", memory.inflight_wait));
  SANDBOX_RETURN_IF_ERROR(r.Read("stream_queue_bytes", memory.stream_queue_bytes));
  return r.RejectUnknown();
}

Status ApplyEgress(const json& doc, const std::string& path, EgressConfig& egress) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("image", egress.image));
  SANDBOX_RETURN_IF_ERROR(r.Read("subnets", egress.subnets));
  SANDBOX_RETURN_IF_ERROR(r.Read("upstream_network", egress.upstream_network));
  SANDBOX_RETURN_IF_ERROR(r.Read("require_host_firewall", egress.require_host_firewall));
  SANDBOX_RETURN_IF_ERROR(r.Read("ca_cert_file", egress.ca_cert_file));
  SANDBOX_RETURN_IF_ERROR(r.Read("ca_key_file", egress.ca_key_file));
  SANDBOX_RETURN_IF_ERROR(r.Read("upstream_ca_file", egress.upstream_ca_file));
  return r.RejectUnknown();
}

Status ApplyTasks(const json& doc, const std::string& path, TasksConfig& tasks) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("ttl_s", tasks.ttl));
  SANDBOX_RETURN_IF_ERROR(r.Read("poll_interval_ms", tasks.poll_interval));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_running_per_principal", tasks.max_running_per_principal));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_per_principal", tasks.max_per_principal));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_running", tasks.max_running));
  SANDBOX_RETURN_IF_ERROR(r.Read("live_output_bytes", tasks.live_output_bytes));
  SANDBOX_RETURN_IF_ERROR(
      r.Read("max_result_bytes_per_principal", tasks.max_result_bytes_per_principal));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_result_bytes", tasks.max_result_bytes));
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

Status ApplyEngine(const json& doc, const std::string& path, EngineConfig& engine) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  SANDBOX_RETURN_IF_ERROR(r.Read("name", engine.name));
  SANDBOX_RETURN_IF_ERROR(r.Read("host", engine.host));
  SANDBOX_RETURN_IF_ERROR(r.Read("tls_ca", engine.tls_ca));
  SANDBOX_RETURN_IF_ERROR(r.Read("tls_cert", engine.tls_cert));
  SANDBOX_RETURN_IF_ERROR(r.Read("tls_key", engine.tls_key));
  SANDBOX_RETURN_IF_ERROR(r.Read("seccomp_profile_path", engine.seccomp_profile_path));
  return r.RejectUnknown();
}

Status ApplyDocker(const json& doc, const std::string& path, DockerConfig& docker) {
  ObjectReader r(doc, path);
  SANDBOX_RETURN_IF_ERROR(r.Check());
  // Two ways to say one thing: refused even where the shorthand repeats its own default, which
  // Validate() could not tell from an unset key. An empty list is the shorthand's.
  if (auto engines = doc.find("engines"); engines != doc.end() && !engines->empty()) {
    for (const char* key : {"host", "tls_ca", "tls_cert", "tls_key"}) {
      if (doc.contains(key)) {
        return Invalid(r.Child(key),
                       "set together with docker.engines: list every engine in docker.engines "
                       "(docker.host and docker.tls_* are the one-engine shorthand)");
      }
    }
  }
  SANDBOX_RETURN_IF_ERROR(
      r.ReadObject("engines", [&](const json& v, const std::string& p) -> Status {
        if (!v.is_array()) return Invalid(p, "expected an array of engine objects");
        docker.engines.clear();
        for (std::size_t i = 0; i < v.size(); ++i) {
          EngineConfig engine;
          SANDBOX_RETURN_IF_ERROR(ApplyEngine(v[i], p + "[" + std::to_string(i) + "]", engine));
          docker.engines.push_back(std::move(engine));
        }
        return OkStatus();
      }));
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
  SANDBOX_RETURN_IF_ERROR(r.Read("max_figure_bytes", output.max_figure_bytes));
  SANDBOX_RETURN_IF_ERROR(r.Read("max_figures_bytes", output.max_figures_bytes));
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

Status ApplyNetworkJson(const json& doc, const std::string& path, NetworkPolicy& out) {
  return ApplyNetwork(doc, path, out);
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
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("egress", [&](const json& v, const std::string& p) {
    return ApplyEgress(v, p, base.egress);
  }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject(
      "tasks", [&](const json& v, const std::string& p) { return ApplyTasks(v, p, base.tasks); }));
  SANDBOX_RETURN_IF_ERROR(r.ReadObject("memory", [&](const json& v, const std::string& p) {
    return ApplyMemory(v, p, base.memory);
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

}  // namespace sandbox::config
