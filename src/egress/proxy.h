// The egress proxy (docs/network.md): HTTP/1.1 CONNECT and absolute-form requests from the
// sandboxes of egress networks, each decided by the network policy of the pool its source
// address belongs to (policy_table.h), with the configuration's own decisions
// (config::DecideName, config::DecideAddress):
//   - a refusal is an immediate 403 naming the pool and the reason;
//   - only allowed names are resolved (off the event loop), every address they resolve to is
//     decided again, and the first allowed one is connected to;
//   - a CONNECT tunnel carries TLS only, and its ClientHello's SNI must name the CONNECT
//     target (else a TLS access_denied alert) before a byte of it is forwarded;
//   - a plain HTTP request is sent upstream as its own origin-form head, one per connection;
//   - a CONNECT to a host with credentials (injection.h) is terminated: TLS toward the code
//     with a leaf certificate of the deployment CA, TLS toward the upstream, verified, and
//     HTTP/1.1 between them with the headers injected and the responses scrubbed
//     (tls_intercept.h); a plain http:// request to such a host is a 403.
// Each connection ends with a {"ev":"conn",...} audit event.
// Thread-safety: Run on one thread; Stop and stats from any.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "event_sink.h"
#include "policy_table.h"
#include "sandbox/core/result.h"
#include "tls_authority.h"
#include "upstream.h"

namespace sandbox::egress {

struct ProxyOptions {
  // Connections open at once from every source; more are answered 503 at once.
  int max_connections = 1024;
  // From one source address (one sandbox); more are answered 429 at once.
  int max_connections_per_source = 32;
  // A request head (request line and headers); larger: 431.
  std::size_t max_head_bytes = std::size_t{16} << 10;
  // For the request head, and after a CONNECT for the TLS ClientHello.
  std::chrono::milliseconds head_timeout{10'000};
  // Resolving a name and connecting to it; beyond: 504.
  std::chrono::milliseconds connect_timeout{10'000};
  // A tunnel or response with no byte either way is closed.
  std::chrono::milliseconds idle_timeout{300'000};
  // The most bytes one connection may carry, both directions together (counted at the upstream
  // side: sent to it and read from it); checked after every read and write, so it is cut once
  // it has carried more (by at most about a buffer). An unanswered plain request: 413.
  std::uint64_t max_conn_bytes = std::uint64_t{4} << 30;
  // The longest one connection may live from its accept, once relaying; then it is cut. An
  // unanswered plain request: 504.
  std::chrono::milliseconds max_conn_time{3'600'000};
  // Bytes buffered per direction of a connection; reading stops there (back-pressure).
  std::size_t buffer_bytes = std::size_t{64} << 10;
  // A plain HTTP request body (Content-Length); larger: 413. Relayed, not buffered whole.
  std::int64_t max_body_bytes = std::int64_t{1} << 30;
  // getaddrinfo threads, and lookups waiting for one (more: 503).
  int resolver_threads = 4;
  std::size_t max_pending_lookups = 256;
  // After a refusal, how long the client's unread bytes are drained before the close (a close
  // with unread input resets the connection, and the client may lose the answer).
  std::chrono::milliseconds linger{2'000};
};

struct ProxyStats {
  std::uint64_t accepted = 0;
  std::uint64_t allowed = 0;          // connections the policy allowed
  std::uint64_t refused = 0;          // refused by policy, limits or a bad request
  std::uint64_t not_tls = 0;          // CONNECT tunnels that did not start with TLS
  std::uint64_t sni_refused = 0;      // ClientHellos refused with an alert
  std::uint64_t upstream_failed = 0;  // allowed, but resolving or connecting failed (502/504)
  std::uint64_t injected = 0;         // tunnels terminated to inject credentials
  std::uint64_t scrubbed = 0;         // secrets scrubbed from their responses
  std::uint64_t cut_bytes = 0;        // allowed connections cut at max_conn_bytes
  std::uint64_t cut_time = 0;         // allowed connections cut at max_conn_time
  std::size_t open = 0;               // connections open now
};

// The counters as the `stopped` event and the control op "counters" report them ("open" and
// the event sink's "events_dropped" are the caller's to add).
nlohmann::json StatsJson(const ProxyStats& stats);

class Proxy {
 public:
  // Binds `host`:`port` (port 0: any free port, see port()).
  static Result<std::unique_ptr<Proxy>> Listen(const std::string& host, int port,
                                               ProxyOptions options, PolicyTable& table,
                                               TlsSettings& tls, EventSink& events,
                                               std::unique_ptr<Upstream> upstream);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Serves until Stop(); closes every connection on the way out.
  void Run();
  void Stop();
  int port() const { return port_; }
  ProxyStats stats() const;

  class Impl;

 private:
  Proxy(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_;
};

}  // namespace sandbox::egress
