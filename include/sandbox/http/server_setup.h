// How the server's httplib::Server is configured for MCP: a worker pool large enough that open
// SSE streams (each holds a worker for its life) never starve short requests such as a
// notifications/cancelled POST, a request body limit (413 beyond it), timeouts that suit long
// streams, keep-alive, and the RequestGuard.
//
// httplib serves a connection on one worker from its request to the end of its keep-alive wait,
// and queues new connections while every worker is busy, with no bound. So streams (and runs)
// are bounded by a SlotLimiter of `stream_workers` slots, which refuses the one beyond with 503,
// and the server gets `threads` workers on top of one per slot: with every slot taken, `threads`
// workers are still there for everything else.
// Behind the ConnectionGuard (connection_guard.h) a worker is taken only by a complete request
// (the guard reads heads and bodies itself), and each internal connection carries one request.
// The guard reaches cpp-httplib over an InternalSocket, which no other local user can connect
// to.
// Thread-safety: call before listening, from the thread that owns the server.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sandbox/core/result.h"
#include "sandbox/http/request_guard.h"

namespace httplib {
class Server;
}

namespace sandbox::http {

struct HttpServerOptions {
  int threads = 64;        // workers for ordinary requests (and idle keep-alive connections)
  int stream_workers = 0;  // added to them: one per slot of the stream limit
  std::int64_t max_body_bytes = 8LL << 20;  // larger bodies get 413
  int read_timeout_s = 30;                  // to receive a request
  int write_timeout_s = 30;                 // for one write to a slow client
  // An idle keep-alive connection holds its worker until this passes, and httplib's stop() waits
  // for it (its keep-alive wait does not watch for shutdown): short, so SIGTERM exits within
  // seconds (docker stop allows 10). Reconnecting on loopback costs nothing.
  int keep_alive_timeout_s = 3;
  std::size_t keep_alive_max_requests = 1000;
};

// `guard` must outlive the server (the pre-routing handler refers to it).
void ConfigureHttpServer(httplib::Server& server, const HttpServerOptions& options,
                         const RequestGuard& guard);

// Options of the listening socket (accepted connections inherit them): SO_REUSEADDR but not
// SO_REUSEPORT (so a port already in use fails to bind), and TCP_NODELAY.
void ListenSocketOptions(int sock);

// Binds `server` to host:port (port 0: any free one) with a listen backlog of `backlog`, in
// place of bind_to_port(). httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
// compiled into Debian's library): of more connections arriving at once than its acceptor has
// taken, the kernel drops the rest, and their clients retry a second or more later. Returns
// the bound port, or -1 (also when another socket listens on it: see ListenSocketOptions).
int BindServer(httplib::Server& server, const std::string& host, int port, int backlog = SOMAXCONN);

// The hop from the ConnectionGuard to cpp-httplib: a Unix socket, "http.sock", in a directory of
// its own that mkdtemp makes under `parent` (mode 0700), the socket itself 0600. Only this
// process's user (and root, who can read its memory anyway) can connect, so no other local
// process can occupy cpp-httplib's workers, and the server opens no TCP port for it (a loopback
// port answered anyone on the host, after reading their whole header). The socket and its
// directory are removed when this is destroyed.
class InternalSocket {
 public:
  // Binds `server` to a new internal socket with a listen backlog of `backlog` (see
  // BindServer); serve it with server.listen_after_bind().
  static Result<std::unique_ptr<InternalSocket>> Bind(httplib::Server& server,
                                                      const std::string& parent,
                                                      int backlog = SOMAXCONN);
  ~InternalSocket();
  InternalSocket(const InternalSocket&) = delete;
  InternalSocket& operator=(const InternalSocket&) = delete;

  const std::string& path() const { return path_; }
  const std::string& directory() const { return dir_; }

 private:
  explicit InternalSocket(std::string dir);
  std::string dir_;
  std::string path_;
  bool bound_ = false;
};

// Stops a server that another thread serves with listen_after_bind(). cpp-httplib's stop() does
// nothing until that listen has begun, so a stop that comes first (a signal during start-up, a
// test that ends before its first request reaches the server) was lost and the listen never
// returned. This waits for the listen to begin, or for `listen_returned` (set by the serving
// thread once listen_after_bind() returns), then stops it once.
void StopListening(httplib::Server& server, const std::atomic<bool>& listen_returned);

// Where the internal socket's directory goes: $TMPDIR when it is an absolute path, else /tmp.
std::string InternalSocketParent();

}  // namespace sandbox::http
