// StreamableHttpTransport: MCP Streamable HTTP at one path (/mcp), both eras: 2025-03-26 ..
// 2025-11-25 with initialize and Mcp-Session-Id, and 2026-07-28 without either.
//
// 2026-07-28 (a request whose MCP-Protocol-Version header is 2026-07-28, or without that header
// whose body names its version in _meta or asks server/discover): MCP-Protocol-Version must equal
// _meta's version and Mcp-Method / Mcp-Name the body's method and name (400, -32020); _meta
// must be valid (400, -32602; an unknown version 400, -32022); unknown methods 404 (-32601); no
// session is created or read. tools/call is answered as an SSE stream, everything else as JSON.
// An MCP-Protocol-Version no era knows gets 400 -32022 whatever the body. DELETE without a
// session id: 405.
//
// The legacy era:
// POST carries one message (or a 2025-03-26 batch):
//   - Accept must allow application/json and text/event-stream (406), Content-Type must be
//     application/json (415), the body at most max_body_bytes (413), valid JSON (400, -32700).
//   - initialize creates a session and returns Mcp-Session-Id (256 random bits, hex). Every
//     later request needs it: missing 400, unknown or ended 404 (-32001).
//   - MCP-Protocol-Version, when sent, must be a supported version (400); absent means the
//     negotiated one.
//   - Notifications and responses: 202, empty body.
//   - tools/call: answered as an SSE stream (its progress and log notifications, then the
//     response, then the stream ends); every other request: one application/json body.
// DELETE ends a session (its runs are cancelled): 200. GET: 405 with Allow (no server-initiated
// stream; the server sends no requests and no list-changed notifications).
//
// Principals: an MCP session belongs to the principal of the request that initialized it (its
// bearer token's name, from `principal`). A later request (or DELETE) on that Mcp-Session-Id
// with another principal gets 404 -32001, exactly as an unknown session, so a session id is of
// no use with another token and its existence is not revealed.
//
// A dropped connection cancels the request whose stream it carried: this transport keeps no
// replay buffer, so a response whose stream is gone could never be delivered, and a sandbox
// running for nobody only takes capacity from others (2026-07-28 makes this the rule).
//
// Thread-safety: handlers run on httplib workers concurrently; Shutdown() from any thread.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "sandbox/http/httplib_fwd.h"
#include "sandbox/mcp/dispatcher.h"
#include "sandbox/mcp/session.h"
#include "sandbox/transport/http_transport_core.h"
#include "sandbox/transport/http_transport_options.h"
#include "sandbox/transport/session_table.h"

namespace sandbox::transport {

struct StreamableHttpOptions {
  HttpTransportOptions http;
  // The MCP sessions: initialize beyond max_sessions gets 503; at the principal's share it ends
  // the principal's least recently used idle session, or gets 429 when every one is busy.
  SessionTableOptions sessions;
};

class StreamableHttpTransport {
 public:
  StreamableHttpTransport(mcp::Dispatcher& dispatcher, const StreamableHttpOptions& options,
                          std::shared_ptr<spdlog::logger> logger);
  ~StreamableHttpTransport();
  StreamableHttpTransport(const StreamableHttpTransport&) = delete;
  StreamableHttpTransport& operator=(const StreamableHttpTransport&) = delete;

  void Register(httplib::Server& server, const std::string& path = "/mcp");
  // Ends every session (cancelling their runs), refuses new requests (503) and waits for the
  // running calls to finish. Idempotent.
  void Shutdown();
  std::size_t session_count() const;

 private:
  void HandlePost(const httplib::Request& req, httplib::Response& res);
  void HandleDelete(const httplib::Request& req, httplib::Response& res);
  // The new session, or nullptr with `refusal` (status and message) set.
  std::shared_ptr<TransportSession> CreateSession(std::string principal,
                                                  std::pair<int, std::string>& refusal);
  std::string PrincipalOf(const httplib::Request& req) const;
  // 2026-07-28: headers checked against the body, no transport session, errors with their
  // HTTP status (400 for header, _meta and version errors, 404 for unknown methods).
  void HandleModernPost(const httplib::Request& req, nlohmann::json message,
                        httplib::Response& res);
  // Answers one request as an SSE stream; closing the stream cancels it. `session` holds the
  // request in flight (a legacy session, or a 2026-07-28 request's own record); `modern`: a
  // 2026-07-28 request's _meta as CheckModern read it, nullopt for the legacy era.
  void StreamCall(const std::shared_ptr<mcp::Session>& session,
                  std::optional<mcp::RequestMeta> modern, nlohmann::json message,
                  httplib::Response& res);

  HttpTransportCore<TransportSession> core_;
};

}  // namespace sandbox::transport
