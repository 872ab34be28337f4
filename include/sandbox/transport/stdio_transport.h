// StdioTransport: MCP over a pair of file descriptors (stdin/stdout in production, pipes in
// tests): one JSON-RPC message (or 2025-03-26 batch) per line, UTF-8, no embedded newlines.
// Nothing but protocol messages is written to `out_fd` (logs go to stderr).
//
// Both eras: until an initialize, a request that names protocol version 2026-07-28 in its _meta
// (or asks server/discover) is served on its own (HandleModern); initialize makes the process a
// legacy session for good, as the 2026-07-28 revision prescribes for stdio.
//
// One Session for the process, principal "local". tools/call runs on its own thread (TaskGroup), so
// a notifications/cancelled read meanwhile reaches it; other requests are answered inline, in
// order. A line longer than max_message_bytes is answered with -32600 and skipped.
//
// End of input: the client is done sending, not necessarily done reading, so requests in
// flight finish (each bounded by its run timeout) and their responses are written before Run
// returns; `echo '...' | sandbox-mcp --stdio` works. Stop() (SIGTERM) instead cancels them.
//
// Thread-safety: Run() on one thread; Stop() from any thread.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/session.h"
#include "sandbox/mcp/task_group.h"

namespace sandbox::transport {

struct StdioOptions {
  std::size_t max_message_bytes = 8 << 20;
  std::size_t max_concurrent_calls = 64;
};

class StdioTransport {
 public:
  StdioTransport(mcp::Dispatcher& dispatcher, StdioOptions options,
                 std::shared_ptr<spdlog::logger> logger);

  // Serves until end of input or Stop(). Returns after every task has ended.
  void Run(int in_fd, int out_fd);
  // Cancels every run in flight and makes Run() return soon.
  void Stop();

 private:
  void HandleLine(std::string_view line);
  void Write(const nlohmann::json& message);

  mcp::Dispatcher& dispatcher_;
  const StdioOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  mcp::Session session_;
  // The 2026-07-28 requests in flight, so notifications/cancelled finds them.
  mcp::Session modern_;
  std::atomic<bool> stop_{false};
  std::mutex write_mu_;
  int out_fd_ = -1;
  mcp::TaskGroup tasks_;
};

}  // namespace sandbox::transport
