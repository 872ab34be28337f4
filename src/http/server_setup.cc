#include "sandbox/http/server_setup.h"

#include <httplib.h>

#include <algorithm>

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

}  // namespace sandbox::http
