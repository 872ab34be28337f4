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

#include <chrono>
#include <memory>
#include <string>

#include "sandbox/http/httplib_fwd.h"
#include "sandbox/http/sse_channel.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/transport/http_transport_core.h"
#include "sandbox/transport/http_transport_options.h"
#include "sandbox/transport/session_table.h"

namespace sandbox::transport {

struct LegacySseOptions {
  HttpTransportOptions http;
  // A session lives as long as its stream: no idle expiry and no per-principal share (the
  // stream slots bound each principal); more than max_sessions open: 503.
  SessionTableOptions sessions{.max_sessions = 1000,
                               .max_sessions_per_principal = 0,
                               .idle_ttl = std::chrono::seconds(0),
                               .now = {},
                               .replica = {}};
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
  // A session and the stream its messages go out on; ending it closes the stream.
  struct LegacySession : TransportSession {
    LegacySession(std::string session_id, std::string principal,
                  std::shared_ptr<http::SseChannel> stream)
        : TransportSession(std::move(session_id), std::move(principal)),
          channel(std::move(stream)) {}
    void End() override {
      mcp.End();
      channel->Close();
    }
    const std::shared_ptr<http::SseChannel> channel;
  };
  void HandleStream(const httplib::Request& req, httplib::Response& res);
  void HandleMessage(const httplib::Request& req, httplib::Response& res);
  std::string PrincipalOf(const httplib::Request& req) const;

  HttpTransportCore<LegacySession> core_;
  std::string messages_path_ = "/messages";
};

}  // namespace sandbox::transport
