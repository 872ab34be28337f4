// ConnectionGuard: the server's public listening socket, in front of cpp-httplib.
//
// cpp-httplib serves a connection on one worker thread from its first byte to the end of its
// keep-alive wait, with a per-recv timeout only and no limit on header count or on a header
// line before it is buffered whole. So idle or trickling connections could hold every worker,
// and one endless header line all memory. The guard owns every client connection on one epoll
// thread instead and reads each request itself, under limits:
//
// - a request head: HeadLimits (size, header count, line lengths: 431/414) and a deadline for
//   the whole head from its first byte (head_timeout: 408);
// - its body: Content-Length only (Transfer-Encoding: 411), at most max_body_bytes (413, sent
//   before the body is read), received within body_timeout (408), and buffered whole: its bytes
//   are reserved in the server's in-flight budget (`inflight`, memory.inflight_bytes) before the
//   first is read, and held until its response is complete (cpp-httplib keeps its copy of the
//   body that long); a body that does not fit is refused with 503 naming the budget;
// - connections: at most max_connections, max_connections_per_ip from one address (503), and
//   one with no request outstanding is closed after idle_timeout.
//
// Each refusal is answered by the guard with a JSON body that names the limit, then the
// connection is closed. A complete request is forwarded to cpp-httplib on its internal Unix
// socket (InternalSocket, server_setup.h) over a new connection, as the guard's own
// serialization of the parsed head
// with "Connection: close" and X-Forwarded-For (the client's address); the response is relayed
// back with its Connection header rewritten, so the client keeps its keep-alive connection and
// a cpp-httplib worker is held only while a request is being served. A client that closes its
// connection (or half-closes it) closes the upstream connection at once: a stream's handler
// sees its client gone and cancels the run, as it would without the guard.
//
// The internal socket sits in a private directory (0700) and is itself 0600, so no other local
// user's process can reach cpp-httplib's workers; the server has no TCP port but the guard's.
//
// Thread-safety: Run() on one thread; Stop() and stats() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/byte_budget.h"
#include "sandbox/core/result.h"
#include "sandbox/http1/request_head.h"

namespace spdlog {
class logger;
}

namespace sandbox::http {

// The server's configuration (config::ServerConfig) owns these values; the defaults here are
// the same, for tests that construct a guard directly.
struct ConnectionGuardOptions {
  HeadLimits head;
  std::chrono::milliseconds head_timeout{10000};  // whole request head, from its first byte
  std::chrono::milliseconds body_timeout{60000};  // whole body, from the end of its head
  std::chrono::milliseconds idle_timeout{30000};  // a connection with no request outstanding
  // A client that takes no bytes of a response for this long is disconnected.
  std::chrono::milliseconds send_timeout{30000};
  // After a refusal: how long the rest of the client's request is read and discarded, so the
  // close does not reset the connection before the client has read the refusal.
  std::chrono::milliseconds linger{2000};
  int max_connections = 2048;
  int max_connections_per_ip = 512;
  // The server-wide budget request bodies reserve their bytes in (memory.inflight_bytes).
  // Null: a budget of max_buffered_bytes of the guard's own (tests that build a guard alone).
  ByteBudget* inflight = nullptr;
  std::size_t max_buffered_bytes = 256u << 20;
  // Response bytes buffered for a slow client before reading from cpp-httplib pauses.
  std::size_t max_response_buffer = 256u << 10;
};

struct ConnectionGuardStats {
  std::size_t connections = 0;  // client connections open now
  std::size_t upstreams = 0;    // requests being served by cpp-httplib now
  std::uint64_t refused_total = 0;
};

class ConnectionGuard {
 public:
  // Listens on host:port (port 0: a free one) and forwards to the Unix socket at
  // `upstream_path` (InternalSocket::path()).
  static Result<std::unique_ptr<ConnectionGuard>> Listen(const std::string& host, int port,
                                                         const std::string& upstream_path,
                                                         ConnectionGuardOptions options,
                                                         std::shared_ptr<spdlog::logger> logger);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  int port() const { return port_; }
  // Serves until Stop(); then closes every connection (their upstreams too) and returns.
  void Run();
  void Stop();

  ConnectionGuardStats stats() const;

  class Impl;

 private:
  ConnectionGuard(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_;
};

}  // namespace sandbox::http
