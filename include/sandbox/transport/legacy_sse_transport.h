// LegacySseTransport: the HTTP+SSE transport of protocol 2024-11-05, kept for older clients.
// GET /sse opens a stream whose first event is `endpoint` with the relative URI
// /messages?sessionId=<id>; the client POSTs each message there (202, empty body) and every
// response and notification goes out on the stream as an `event: message`. tools/call runs on
// its own thread so later POSTs (a notifications/cancelled) are handled meanwhile.
// Closing the stream ends the session and cancels its runs (nothing could receive their results).
// The session's principal is that of the GET /sse request (its bearer token's name); a POST with
// another principal gets 404, as for an unknown session.
//
// Thread-safety: handlers run on httplib workers concurrently; Shutdown() from any thread.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "sandbox/core/slot_limiter.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/sse_channel.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/session.h"
#include "sandbox/mcp/task_group.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace sandbox::transport {

struct LegacySseOptions {
  std::size_t max_body_bytes = 8 << 20;
  std::size_t max_sessions = 1000;
  std::size_t max_concurrent_calls = 256;
  // Each open stream holds a slot (it holds an HTTP worker for its life); none free: 503.
  // Shared with the other transports; null: no bound but max_sessions.
  std::shared_ptr<SlotLimiter> stream_slots;
  http::SseOptions sse;
  // The principal of a request from its Authorization header; unset: "local".
  http::PrincipalResolver principal;
};

class LegacySseTransport {
 public:
  LegacySseTransport(mcp::Dispatcher& dispatcher, const LegacySseOptions& options,
                     std::shared_ptr<spdlog::logger> logger);
  ~LegacySseTransport();
  LegacySseTransport(const LegacySseTransport&) = delete;
  LegacySseTransport& operator=(const LegacySseTransport&) = delete;

  void Register(httplib::Server& server, const std::string& sse_path = "/sse",
                const std::string& messages_path = "/messages");
  // Ends every session and closes every stream; waits for running calls. Idempotent.
  void Shutdown();
  std::size_t session_count() const;

 private:
  struct LegacySession {
    explicit LegacySession(std::string principal) : mcp(std::move(principal)) {}
    std::string id;
    mcp::Session mcp;
    std::shared_ptr<http::SseChannel> channel;
  };
  void HandleStream(const httplib::Request& req, httplib::Response& res);
  void HandleMessage(const httplib::Request& req, httplib::Response& res);
  void RemoveSession(const std::string& id);
  std::string PrincipalOf(const httplib::Request& req) const;

  mcp::Dispatcher& dispatcher_;
  const LegacySseOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::string messages_path_ = "/messages";
  std::atomic<bool> shutting_down_{false};
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<LegacySession>> sessions_;
  mcp::TaskGroup tasks_;
};

}  // namespace sandbox::transport
