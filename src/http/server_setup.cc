#include "sandbox/http/server_setup.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>

namespace sandbox::http {

void ConfigureHttpServer(httplib::Server& server, const HttpServerOptions& options,
                         const RequestGuard& guard) {
  // The Debian .so ignores CPPHTTPLIB_THREAD_POOL_COUNT; only new_task_queue sizes the pool.
  const auto threads = static_cast<std::size_t>(std::max(options.threads, 1)) +
                       static_cast<std::size_t>(std::max(options.stream_workers, 0));
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(static_cast<std::size_t>(options.max_body_bytes));
  server.set_read_timeout(options.read_timeout_s, 0);
  server.set_write_timeout(options.write_timeout_s, 0);
  server.set_keep_alive_timeout(options.keep_alive_timeout_s);
  server.set_keep_alive_max_count(options.keep_alive_max_requests);
  guard.Install(server);
}

int BindServer(httplib::Server& server, const std::string& host, int port, int backlog) {
  // The socket is only handed out to the socket-options hook, which runs before bind; its last
  // call is the socket that was bound (failed attempts are closed before the next).
  auto bound_fd = std::make_shared<int>(-1);
  server.set_socket_options([bound_fd](int sock) {
    httplib::default_socket_options(sock);
    *bound_fd = sock;
  });
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  server.set_socket_options(httplib::default_socket_options);
  // listen() on a listening socket only changes its backlog.
  if (bound > 0 && *bound_fd >= 0 && ::listen(*bound_fd, backlog) != 0) return -1;
  return bound;
}

}  // namespace sandbox::http
