// Session: the protocol state of one MCP client connection, apart from any transport: the
// negotiated version, the client's logging level, and the requests in flight with their cancel
// tokens. Streamable HTTP keeps one per Mcp-Session-Id, legacy SSE one per stream, stdio one per
// process. The stateless 2026-07-28 era would build a throwaway one per request.
//
// The principal (whom the client acts for: its bearer token's name, "local" for stdio and for a
// server without tokens) is fixed at creation by the transport; tools scope sandbox sessions
// and their files by it.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/exec/cancel_token.h"
#include "sandbox/mcp/log_level.h"

namespace sandbox::mcp {

class Session {
 public:
  explicit Session(std::string principal = "local") : principal_(std::move(principal)) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& principal() const { return principal_; }

  // True once initialize has been answered (requests other than ping need it).
  bool initialized() const;
  // The negotiated version; empty before initialize.
  std::string protocol_version() const;
  void MarkInitialized(std::string version, nlohmann::json client_info);
  // notifications/initialized arrived (informational: requests are accepted without it).
  void MarkClientReady();
  bool client_ready() const;
  nlohmann::json client_info() const;

  // The level the client set with logging/setLevel; unset means it never asked for logs, and
  // then the server sends none (see docs/mcp.md, "run_python").
  std::optional<LogLevel> log_level() const;
  void SetLogLevel(LogLevel level);

  // Registers a request in flight. Returns its cancel token, or nullptr when a request with the
  // same id (same type and value) is in flight already or the session has ended.
  std::shared_ptr<exec::CancelToken> BeginRequest(const nlohmann::json& id);
  // Unregisters it; true when it was cancelled, so its response must not be sent.
  bool EndRequest(const nlohmann::json& id);
  // notifications/cancelled: fires the token. False when no such request is in flight.
  bool CancelRequest(const nlohmann::json& id);
  // Ends the session: cancels everything in flight; later BeginRequest calls fail.
  void End();
  bool ended() const;
  std::size_t in_flight() const;

 private:
  struct InFlight {
    std::shared_ptr<exec::CancelToken> token;
    bool cancelled = false;
  };
  const std::string principal_;
  mutable std::mutex mu_;
  bool initialized_ = false;
  bool client_ready_ = false;
  bool ended_ = false;
  std::string version_;
  nlohmann::json client_info_;
  std::optional<LogLevel> log_level_;
  std::map<std::string, InFlight> in_flight_;  // by IdKey
};

}  // namespace sandbox::mcp
