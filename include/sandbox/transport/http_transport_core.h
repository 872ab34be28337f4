// HttpTransportCore: what each HTTP MCP transport (Streamable HTTP, legacy HTTP+SSE) holds
// besides its routes, and how it stops. It holds the dispatcher messages go to, the shared
// options, the sessions (of type S, see session_table.h) and the bounded group of threads that
// tools/call runs on. Stop() ends every session, which cancels its runs, then waits for the
// calls; from then on stopping() is true and the transport refuses requests.
//
// Thread-safety: every method from any thread.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/task_group.h"
#include "sandbox/transport/http_transport_options.h"
#include "sandbox/transport/session_table.h"

namespace sandbox::transport {

template <class S>
class HttpTransportCore {
 public:
  HttpTransportCore(mcp::Dispatcher& dispatcher, const HttpTransportOptions& options,
                    const SessionTableOptions& session_options,
                    std::shared_ptr<spdlog::logger> logger)
      : dispatcher_(dispatcher),
        options_(options),
        logger_(std::move(logger)),
        sessions_(session_options),
        tasks_(options.max_concurrent_calls) {}
  ~HttpTransportCore() { Stop(); }
  HttpTransportCore(const HttpTransportCore&) = delete;
  HttpTransportCore& operator=(const HttpTransportCore&) = delete;

  mcp::Dispatcher& dispatcher() const { return dispatcher_; }
  const HttpTransportOptions& options() const { return options_; }
  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }
  SessionTable<S>& sessions() { return sessions_; }
  const SessionTable<S>& sessions() const { return sessions_; }
  // The threads tools/call runs on; Spawn refuses beyond options().max_concurrent_calls.
  mcp::TaskGroup& tasks() { return tasks_; }

  // Ends the session `id`, if the table still has it.
  void EndSession(const std::string& id) {
    if (auto session = sessions_.Remove(id)) session->End();
  }

  bool stopping() const { return stopping_.load(); }
  // Idempotent; later calls return at once.
  void Stop() {
    if (stopping_.exchange(true)) return;
    for (auto& session : sessions_.TakeAll()) session->End();
    tasks_.Wait();
  }

 private:
  mcp::Dispatcher& dispatcher_;
  const HttpTransportOptions options_;
  const std::shared_ptr<spdlog::logger> logger_;
  std::atomic<bool> stopping_{false};
  SessionTable<S> sessions_;
  mcp::TaskGroup tasks_;
};

}  // namespace sandbox::transport
