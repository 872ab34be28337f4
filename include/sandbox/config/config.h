// The server's one typed configuration. Built once in main from defaults, an optional JSON file
// (--config) and the command line / environment, validated by Validate() before anything starts,
// then passed down by const reference. Every field documents its default.
// Thread-safety: an immutable value after start-up; safe to read from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/config/bounds.h"
#include "sandbox/config/network_policy.h"
#include "sandbox/core/result.h"

namespace sandbox::config {

// Resource limits of one run. A pool sets them; a request may narrow (never widen) them.
struct Limits {
  double timeout_s = 30.0;                  // wall time of one run
  std::int64_t memory_bytes = 512LL << 20;  // the run's memory budget; swap is set equal (none)
  double cpus = 1.0;                        // CPU share of the container (NanoCpus)
  std::int64_t pids = 128;                  // cgroup pids limit of the container
  std::int64_t nproc = 256;                 // RLIMIT_NPROC of the run (counts the uid host-wide)
  std::int64_t nofile = 256;                // RLIMIT_NOFILE of the run
  std::int64_t fsize_bytes = 64LL << 20;    // RLIMIT_FSIZE: largest file the run may write
  std::int64_t tmpfs_bytes = 64LL << 20;    // size of the run's /tmp and work directory tmpfs
  std::int64_t output_bytes = 1LL << 20;    // stdout+stderr bytes before the run is killed
  std::int64_t cpu_s = 0;                   // RLIMIT_CPU seconds; 0 = derived from timeout_s

  bool operator==(const Limits&) const = default;

  // The default ceiling a request may raise its limits to.
  static Limits DefaultMaxima() {
    Limits max;
    max.timeout_s = 300;
    max.memory_bytes = 2LL << 30;
    max.cpus = 2.0;
    max.pids = 512;
    max.nproc = 1024;
    max.nofile = 1024;
    max.fsize_bytes = 256LL << 20;
    max.tmpfs_bytes = 256LL << 20;
    max.output_bytes = 16LL << 20;
    return max;
  }
};

// Bounds on what comes back from a run.
struct OutputOptions {
  int max_figures = 16;      // PNGs per run
  int max_figure_px = 4096;  // width and height bound of one figure
  // PNG bytes of one figure, and of all a run's figures together: noise within the pixel bound
  // compresses to tens of MB. A figure over either is dropped and the run's images_truncated set.
  std::int64_t max_figure_bytes = 4LL << 20;
  std::int64_t max_figures_bytes = 16LL << 20;
  int figure_dpi = 100;
  int max_files = 32;                         // files returned from the work directory
  std::int64_t max_files_bytes = 16LL << 20;  // their total size

  bool operator==(const OutputOptions&) const = default;
};

enum class PoolMode { kRecycle, kFresh };

// The pool's autoscaler (pool/autoscale_policy.h): min_idle follows the peak demand (leased +
// waiting sandboxes) over the last window_s seconds plus headroom, between min_idle_floor and
// min_idle_ceiling, never above max_total. While it is on, the pool's min_idle is unused.
struct AutoscaleConfig {
  bool enabled = false;
  int min_idle_floor = 1;           // the fewest idle sandboxes it keeps
  int min_idle_ceiling = 0;         // the most; 0 = max_total
  int headroom = 1;                 // idle sandboxes on top of the window's peak demand
  std::chrono::seconds window{60};  // how long a peak keeps the pool large (config: window_s)
  bool operator==(const AutoscaleConfig&) const = default;
};

struct PoolConfig {
  std::string name = "default";
  PoolMode mode = PoolMode::kRecycle;
  std::string image = "sandbox-mcp-python:latest";
  std::string python = "/snekbin/python/default/bin/python";  // works in Snekbox images too
  // Interpreter paths this pool answers to in /eval's executable_path (Snekbox clients pick
  // the interpreter that way), besides `python` itself and, once the pool knows its Python
  // version, /snekbin/python/<major.minor>/bin/python. The default pool also answers to
  // /snekbin/python/default/bin/python and /usr/local/bin/python. A "python3" sibling of each
  // path is accepted too. No path may be declared by two pools.
  std::vector<std::string> executables;
  std::string runtime;  // "" = engine default (runc); "runsc" = gVisor
  // Extra packages the pool's `image` was built with (images/build.sh --tag IMAGE --packages
  // ... --pip ...): Debian package names and pip requirements. Empty: the image as it is. When
  // set, `image` must name an image of its own, and start-up refuses the pool unless the
  // image's labels list exactly these (service/pool_image.h).
  std::vector<std::string> packages;
  std::vector<std::string> pip_packages;
  std::vector<std::string> preload = {"numpy", "pandas", "matplotlib"};
  bool warm_plot = true;  // draw one figure before forking (warms fonts)
  // Fresh pools (default true there; recycle pools reject it): a container started while
  // requests wait for one skips `preload` and `warm_plot`. Each fresh container serves one run,
  // so under a backlog its preload (seconds of CPU) only delays the queue; the run imports
  // what it uses itself.
  bool skip_preload_when_queued = false;
  // Default true for fresh pools, false for recycle pools: lent containers count towards
  // min_idle while one more stays idle, so a replacement starts when its run ends, not when it
  // is lent, and its boot does not slow that run down (pool::PoolOptions::refill_after_run).
  bool refill_after_run = false;
  // Code that reads stdin (input()) in a run whose caller can answer (an MCP task whose client
  // declared elicitation) pauses and asks for the line; every other run reads EOF. Off: every
  // run reads EOF, and the harness creates no stdin channel.
  bool interactive_input = false;
  int min_idle = 2;                                  // containers kept warm and waiting
  int max_total = 8;                                 // containers at most, busy + idle + starting
  int max_concurrent_starts = 2;                     // container starts in flight at once
  std::chrono::milliseconds acquire_timeout{10000};  // past it the caller gets kBusy
  std::chrono::seconds max_age{3600};                // a container older than this is replaced
  int max_runs = 500;                                // recycle: runs served before replacement
  std::int64_t zygote_memory_bytes = 256LL << 20;    // recycle: added to the run budget
  Limits limits;                                     // defaults for runs in this pool
  Limits max_limits = Limits::DefaultMaxima();       // the most a request may ask for
  AutoscaleConfig autoscale;                         // off by default
  // The engines (docker.engines names) this pool's sandboxes run on. Empty: every engine.
  // PoolEngineNames() below resolves it.
  std::vector<std::string> engines;
  // What the pool's code may reach (network_policy.h); default none, no network at all.
  NetworkPolicy network;

  bool operator==(const PoolConfig&) const = default;
};

// One container engine the server runs sandboxes on (docs/scale-out.md section 3). Start-up
// only: a reload reports a change as needing a restart.
struct EngineConfig {
  std::string name;  // [a-z0-9-]{1,32}, unique: a metric label value and the results' `engine`
  std::string host;  // unix:///path or tcp://host:port; beyond loopback only with mutual TLS
  // Mutual TLS: the CA, client certificate and key files, the three together or none; tcp://
  // only.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  // Podman takes a seccomp profile as a path on its own host, not as the JSON text Docker
  // takes (scale-out.md section 8): that path, absolute. "": send the text.
  std::string seccomp_profile_path;

  bool operator==(const EngineConfig&) const = default;
};

struct DockerConfig {
  // Several engines. Empty: the one engine below (host and tls_*), named "local"; setting both
  // is refused. EffectiveEngines() is the list either way.
  std::vector<EngineConfig> engines;
  // The one-engine shorthand: unix:///path or tcp://host:port (TLS when tls_ca/tls_cert/tls_key
  // are set).
  std::string host = "unix:///var/run/docker.sock";
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::chrono::milliseconds call_timeout{30000};  // deadline of ordinary engine calls, any engine

  bool operator==(const DockerConfig&) const = default;
};

// The name of the one engine docker.host and tls_* describe when docker.engines is empty.
inline constexpr const char* kShorthandEngineName = "local";

// The engines the server runs on: docker.engines as configured, or, when it is empty, one engine
// named "local" from docker.host and tls_*. The one owner of that fact: nothing else reads
// docker.host.
std::vector<EngineConfig> EffectiveEngines(const DockerConfig& docker);

// The engine names a pool runs on: pools[].engines, or every engine of EffectiveEngines() when it
// is empty, in configuration order.
std::vector<std::string> PoolEngineNames(const PoolConfig& pool, const DockerConfig& docker);

struct ServerConfig {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  bool stdio = false;  // MCP over stdin/stdout instead of HTTP
  std::string token;   // bearer token; required beyond loopback
  // More bearer tokens, by name: each is a principal of its own (its own sessions and session
  // quota). `token` above is the principal "default". Each at least 16 characters.
  std::map<std::string, std::string> tokens;
  // Tokens of the admin API (/admin/...), by name (the principal named in the change log). Each
  // at least 16 characters and none equal to a run token: run tokens never work there, and
  // admin tokens work nowhere else. Empty: the admin API is disabled (404).
  std::map<std::string, std::string> admin_tokens;
  int http_threads = 64;                     // HTTP workers besides one per max_streams
  std::int64_t max_body_bytes = 8LL << 20;   // larger request bodies get 413
  std::vector<std::string> allowed_origins;  // extra Origins accepted besides loopback ones
  std::vector<std::string> allowed_hosts;    // extra Host names accepted besides loopback ones
  // Requests that hold an HTTP worker for long (SSE streams: legacy /sse, /mcp tool calls,
  // /v1/execute; runs through /v1/execute and /eval) at once; more get 503. The server has a
  // worker for each on top of http_threads, so they never starve other requests.
  int max_streams = 256;
  // MCP transport sessions (Streamable HTTP initialize) held at once; more get 503. Idle ones
  // (no call for mcp_session_idle_timeout) are forgotten.
  int max_mcp_sessions = 10000;
  std::chrono::seconds mcp_session_idle_timeout{3600};
  // The connection guard in front of the HTTP workers (http::ConnectionGuard): it reads every
  // request itself, so an idle or slow client holds a socket, never a worker.
  std::int64_t max_header_bytes = 32768;    // request line + headers; beyond: 431
  int max_headers = 100;                    // header fields in one request; beyond: 431
  std::chrono::seconds header_timeout{10};  // whole request head from its first byte: 408
  std::chrono::seconds body_timeout{60};    // whole body from the end of its head: 408
  std::chrono::seconds idle_timeout{30};    // keep-alive connection with no request: closed
  int max_connections = 2048;               // client connections at once; beyond: 503
  int max_connections_per_ip = 512;         // from one client address; beyond: 503
  // Replicas behind a balancer (docs/multi-node.md): this replica's name, 1-8 of [a-z0-9]. Every
  // id it mints (MCP sessions, sandbox sessions, tasks) starts with "<replica>-", which the
  // balancer routes by (core/replica_id.h). "": ids carry no prefix (a server on its own).
  std::string replica;
  // A file holding the key that seals the requestState of 2026-07-28 multi round-trip calls
  // (at least 32 bytes; its bytes are the key), the same file on every replica, so a round trip
  // balanced to another replica opens there. "": a random key per process.
  std::string request_state_key_file;

  bool operator==(const ServerConfig&) const = default;
};

// Each principal's share of the server-wide bounds (a principal is a bearer token's name,
// "local" without tokens), so one token can never exhaust a bound for the others; and fair
// sharing of runs. Sessions have theirs in SessionConfig::max_per_principal. The shares of
// max_streams and max_mcp_sessions apply once the tokens make more than one principal.
struct PrincipalLimits {
  // Of server.max_streams; beyond it 429. 0: half of server.max_streams (at least 1).
  int max_streams = 0;
  // Of server.max_mcp_sessions; at it, the principal's least recently used idle session ends
  // when it initializes one more (429 if none is idle). 0: a tenth of server.max_mcp_sessions.
  int max_mcp_sessions = 0;
  // Runs (one-shot and session cells) in progress at once; beyond it 429 (MCP: a tool error).
  // 0: only the pools bound them; each pool hands a freed sandbox to the waiter whose
  // principal holds the fewest of its sandboxes either way.
  int max_concurrent_runs = 0;
  int runs_per_minute = 0;  // runs started per minute (a minute's worth may come at once); 0: any

  bool operator==(const PrincipalLimits&) const = default;
};

struct PolicyConfig {
  std::string container_seccomp = "policies/seccomp-container.json";
  std::string run_seccomp = "policies/seccomp-run.json";

  bool operator==(const PolicyConfig&) const = default;
};

// Stateful sessions (session_create): each holds one container of its own, from a pool's
// session sandboxes, until it is closed, idles out or reaches its lifetime.
struct SessionConfig {
  bool enabled = true;
  int max_total = 16;                        // sessions at once on this server
  int max_per_principal = 4;                 // sessions at once per token ("local" without a token)
  std::chrono::seconds idle_timeout{900};    // closed after this long without a call
  std::chrono::seconds max_lifetime{14400};  // closed this long after creation, busy or not
  int warm = 1;  // session containers kept started for the default pool (others start on demand)
  std::int64_t max_file_bytes = 16LL << 20;    // one file uploaded to or downloaded from a session
  std::int64_t max_upload_bytes = 32LL << 20;  // one upload call, all files together
  // A call on a busy session waits this long for the session, then fails with "busy".
  std::chrono::milliseconds busy_wait{10000};
  // Upgrades keep sessions: a server that stops (SIGTERM, or dies) leaves its session
  // containers running this long, and the next start of the same instance_id adopts them
  // (variables, files and ownership kept). Each container's harness exits by itself once no
  // server has spoken to it for this long, so nothing outlives it. 0: sessions end with the
  // server, their containers removed (and the harness exits when its server's stream closes).
  std::chrono::seconds restart_grace{300};

  bool operator==(const SessionConfig&) const = default;
};

// MCP tasks (the tasks extension of 2026-07-28): run_python calls that outlive their request.
struct TasksConfig {
  std::chrono::seconds ttl{3600};                 // readable this long after creation (ttlMs)
  std::chrono::milliseconds poll_interval{1000};  // the pollIntervalMs suggested to clients
  int max_running_per_principal = 8;              // working or waiting for input, per token
  int max_per_principal = 100;                    // kept per token, finished ones included
  int max_running = 64;                           // running in the server (a thread each)
  std::int64_t live_output_bytes = 64 << 10;      // tail of a running task's output in tasks/get
  // Finished tasks' results kept for tasks/get, in bytes of their JSON: per token and in the
  // whole server. Past either, the oldest finished results are evicted first (tasks/get then
  // says so); a result larger than the per-token bound is not kept at all.
  std::int64_t max_result_bytes_per_principal = 128LL << 20;
  std::int64_t max_result_bytes = 512LL << 20;

  bool operator==(const TasksConfig&) const = default;
};

// What the server holds for clients at once (docs/memory-budget.md).
struct MemoryConfig {
  // Bytes held for clients at once: request bodies being read, answers being built and sent,
  // stream queues. 0: derived at start-up from the machine (InflightBytes below).
  std::int64_t inflight_bytes = 0;
  // A request whose bytes do not fit waits this long for others to give bytes back, then is
  // refused with an error that names memory.inflight_bytes.
  std::chrono::milliseconds inflight_wait{5000};
  // Each SSE stream (legacy /sse, a Streamable HTTP call, /v1/execute): a push that finds this
  // many bytes still unread drops the reader (a last event says why). Counted in inflight_bytes.
  std::int64_t stream_queue_bytes = 4LL << 20;

  bool operator==(const MemoryConfig&) const = default;
};

// The egress proxy and the networks of pools with a network policy (docs/network.md). Start-up
// only: a reload reports a change as needing a restart.
struct EgressConfig {
  std::string image = "sandbox-mcp-egress:latest";  // the proxy's (images/egress/build.sh)
  // The address space of the pools' internal networks: a /24 per pool and engine, the proxy at
  // .2; a block another network already holds is passed over.
  std::string subnets = "10.213.0.0/16";
  // The network through which the proxy reaches what the policies allow.
  std::string upstream_network = "bridge";
  // A pool with a network policy starts only on a host whose firewall isolates its networks
  // (deploy/egress/host-firewall.sh); the proxy probes it. false: a warning instead.
  bool require_host_firewall = true;
  // The deployment CA the proxy mints its certificates for credential hosts from (PEM files
  // the server reads at start-up; needed when a pool has network.inject). Every pool with
  // credentials needs an image that trusts the certificate (docs/network.md, "Credentials").
  std::string ca_cert_file;
  std::string ca_key_file;
  // More CAs the proxy trusts for the credential hosts' own certificates, besides the system's.
  std::string upstream_ca_file;

  bool operator==(const EgressConfig&) const = default;
};

struct Config {
  ServerConfig server;
  SessionConfig sessions;
  TasksConfig tasks;
  MemoryConfig memory;
  PrincipalLimits per_principal;
  DockerConfig docker;
  EgressConfig egress;
  PolicyConfig policy;
  std::vector<PoolConfig> pools = {PoolConfig{}};
  std::string default_pool = "default";
  std::string log_level = "info";  // trace, debug, info, warn, error
  // "text" (spdlog's default lines) or "json" (one object per line: time, level, logger,
  // thread, msg; logging/json_formatter.h).
  std::string log_format = "text";
  // Debugging only: the audit line of each run (service/audit_log.h) also carries the code, cut
  // at 4 KiB. Off by default: code is the users' data.
  bool log_run_code = false;
  OutputOptions output;
  // Labels every container of this server carries: io.sandbox-mcp.managed=true plus
  // io.sandbox-mcp.instance=<instance_id>, used for crash recovery.
  std::string instance_id = "default";
};

// Applies a JSON document (the --config file) over `base`. Unknown keys are errors, so a typo
// in a configuration never passes silently.
Result<Config> ApplyJson(Config base, const nlohmann::json& doc);
// The same for one pool's `limits` and `autoscale` objects (the admin API's changes): the keys
// present override `out`; `path` names the object in errors.
Status ApplyLimitsJson(const nlohmann::json& doc, const std::string& path, Limits& out);
// Limits as the configuration file spells them (every field), for answers that show them.
nlohmann::json LimitsJson(const Limits& limits);
Status ApplyAutoscaleJson(const nlohmann::json& doc, const std::string& path, AutoscaleConfig& out);
// The same for a pool's `network` object (the whole policy is replaced).
Status ApplyNetworkJson(const nlohmann::json& doc, const std::string& path, NetworkPolicy& out);

// Builds the configuration from argv and the environment (SANDBOX_MCP_TOKEN), reading
// --config FILE when given. Does not validate; call Validate() next.
// Returns kInvalidArgument with a usage hint for bad flags; `help` is set for --help.
struct CommandLine {
  Config config;
  bool help = false;
  bool version = false;
};
Result<CommandLine> ParseCommandLine(int argc, const char* const* argv,
                                     const std::map<std::string, std::string>& env);

// How many principals the tokens make: "local" alone without tokens, server.token's "default",
// one per server.tokens entry.
int PrincipalCount(const Config& config);
// The per-principal shares in effect: PrincipalLimits' 0 resolved against the server's bounds,
// and the whole bound while there is only one principal (there is nobody it could starve).
int StreamsPerPrincipal(const Config& config);
int McpSessionsPerPrincipal(const Config& config);

// memory.inflight_bytes in effect: the configured value, or when it is 0 a quarter of
// `machine_bytes` (core/machine_memory.h) between 256 MiB and 8 GiB (256 MiB when the machine's
// memory is unknown).
std::int64_t InflightBytes(const Config& config, std::int64_t machine_bytes);

// Checks every field; the first problem found is returned with the field's name. The upper
// bounds (bounds.h) include the thread budget of `host`; the default, an unknown host, applies
// the fixed ceilings alone. main and the SIGHUP reload pass ReadHostLimits().
Status Validate(const Config& config, const HostLimits& host = {});

// The checks Validate() makes of one pool's sizes (with their upper bounds), limits and
// autoscaler, for a change made while the server runs (the admin API); `path` names the pool in
// errors ("pools[0]").
Status ValidatePoolSizes(const PoolConfig& pool, const std::string& path);
Status ValidatePoolLimits(const Limits& limits, const Limits& max_limits, const std::string& path);
// A pool's network policy with what it carries: the index and credentials must be allowed.
Status ValidatePoolNetwork(const PoolConfig& pool, const std::string& path);
Status ValidateAutoscale(const AutoscaleConfig& autoscale, int max_total, const std::string& path);

// True for 127.0.0.0/8 as a dotted quad, ::1 (bracketed or not) and "localhost".
bool IsLoopbackHost(const std::string& host);

const PoolConfig* FindPool(const Config& config, const std::string& name);

std::string_view PoolModeName(PoolMode mode);

std::string UsageText();

}  // namespace sandbox::config
