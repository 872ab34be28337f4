#include "sandbox/transport/streamable_http_transport.h"

#include <httplib.h>

#include <optional>

#include "http_common.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/mcp/json_rpc.h"
#include "sandbox/mcp/protocol_version.h"
#include "sandbox/mcp/random_id.h"
#include "sandbox/mcp/request_meta.h"
#include "sandbox/transport/mcp_headers.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;
using mcp::rpc_code::kInvalidRequest;
using mcp::rpc_code::kParseError;
using mcp::rpc_code::kServerError;
using mcp::rpc_code::kSessionNotFound;

constexpr const char* kSessionHeader = "Mcp-Session-Id";
constexpr const char* kVersionHeader = "MCP-Protocol-Version";

bool IsInitialize(const json& message) {
  return message.is_object() && message.contains("method") && message["method"] == "initialize";
}

bool IsRequest(const json& message) {
  return message.is_object() && message.contains("method") && message.contains("id");
}

// The id to echo in a refusal: the request's, when the body is one object with a valid id.
json IdOf(const json& message) {
  if (!message.is_object()) return nullptr;
  auto id = message.find("id");
  if (id == message.end() || !(id->is_string() || id->is_number())) return nullptr;
  return *id;
}

// Which era a POST speaks. A session id or initialize (without a 2026-07-28 header) is the
// legacy handshake's; a 2026-07-28 header, or no header but a body that names its version in
// _meta (or asks server/discover), is the stateless revision's. Anything else stays legacy, so
// today's clients see exactly today's answers.
bool IsModernPost(const httplib::Request& req, const json& message,
                  const std::optional<std::string>& header_version) {
  if (req.has_header(kSessionHeader)) return false;
  if (header_version) return mcp::IsModernProtocolVersion(*header_version);
  if (!message.is_object() || IsInitialize(message)) return false;
  return mcp::MetaProtocolVersion(message).has_value() ||
         (message.contains("method") && message["method"] == "server/discover");
}

}  // namespace

StreamableHttpTransport::StreamableHttpTransport(mcp::Dispatcher& dispatcher,
                                                 const StreamableHttpOptions& options,
                                                 std::shared_ptr<spdlog::logger> logger)
    : dispatcher_(dispatcher),
      options_(options),
      logger_(std::move(logger)),
      tasks_(options.max_concurrent_calls) {}

StreamableHttpTransport::~StreamableHttpTransport() { Shutdown(); }

void StreamableHttpTransport::Register(httplib::Server& server, const std::string& path) {
  server.Post(
      path, [this](const httplib::Request& req, httplib::Response& res) { HandlePost(req, res); });
  server.Delete(path, [this](const httplib::Request& req, httplib::Response& res) {
    HandleDelete(req, res);
  });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Allow", "POST, DELETE");
    http::SendRpcError(res, 405, kServerError,
                       "Method Not Allowed: this server opens no GET stream; POST messages");
  };
  server.Get(path, not_allowed);
  server.Put(path, not_allowed);
  server.Patch(path, not_allowed);
}

std::string StreamableHttpTransport::PrincipalOf(const httplib::Request& req) const {
  return detail::PrincipalOf(options_.principal, req);
}

std::shared_ptr<StreamableHttpTransport::HttpSession> StreamableHttpTransport::CreateSession(
    std::string principal, std::pair<int, std::string>& refusal) {
  std::shared_ptr<HttpSession> evicted;
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  std::size_t mine = 0;
  std::shared_ptr<HttpSession> oldest_idle;  // the principal's least recently used, no call
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const HttpSession& s = *it->second;
    bool idle = now - s.last_used > options_.session_idle_ttl && s.mcp.in_flight() == 0;
    if (idle) {
      it = sessions_.erase(it);
      continue;
    }
    if (s.mcp.principal() == principal) {
      ++mine;
      if (s.mcp.in_flight() == 0 && (!oldest_idle || s.last_used < oldest_idle->last_used)) {
        oldest_idle = it->second;
      }
    }
    ++it;
  }
  if (options_.max_sessions_per_principal > 0 && mine >= options_.max_sessions_per_principal) {
    if (!oldest_idle) {
      refusal = {429, "Too Many Requests: this token has " + std::to_string(mine) +
                          " MCP sessions with calls in flight, the most one token may hold "
                          "(per_principal.max_mcp_sessions); end one (DELETE) or retry later"};
      return nullptr;
    }
    // A client that never DELETEs loses its oldest idle session, not everyone else theirs.
    sessions_.erase(oldest_idle->id);
    evicted = oldest_idle;
  }
  if (sessions_.size() >= options_.max_sessions) {
    refusal = {503, "Service Unavailable: " + std::to_string(options_.max_sessions) +
                        " MCP sessions are open, the most this server holds "
                        "(server.max_mcp_sessions); retry later"};
    return nullptr;
  }
  if (evicted) {
    logger_->info(
        "MCP session limit of the principal reached: its least recently used "
        "session ended");
  }
  auto session = std::make_shared<HttpSession>(std::move(principal));
  session->id = mcp::RandomHexId(32);
  session->last_used = now;
  sessions_.emplace(session->id, session);
  return session;
}

std::shared_ptr<StreamableHttpTransport::HttpSession> StreamableHttpTransport::FindSession(
    const std::string& id, const std::string& principal) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  if (it->second->mcp.principal() != principal) return nullptr;
  it->second->last_used = std::chrono::steady_clock::now();
  return it->second;
}

void StreamableHttpTransport::RemoveSession(const std::string& id) {
  std::shared_ptr<HttpSession> session;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    session = it->second;
    sessions_.erase(it);
  }
  session->mcp.End();
}

std::size_t StreamableHttpTransport::session_count() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void StreamableHttpTransport::Shutdown() {
  if (shutting_down_.exchange(true)) return;
  std::map<std::string, std::shared_ptr<HttpSession>> sessions;
  {
    std::lock_guard lock(mu_);
    sessions.swap(sessions_);
  }
  for (auto& [id, session] : sessions) session->mcp.End();
  tasks_.Wait();
}

void StreamableHttpTransport::HandlePost(const httplib::Request& req, httplib::Response& res) {
  if (shutting_down_.load()) {
    http::SendRpcError(res, 503, kServerError, "Service Unavailable: the server is stopping");
    return;
  }
  const std::string accept = req.get_header_value("Accept");
  if (!http::Accepts(accept, "application/json") || !http::Accepts(accept, "text/event-stream")) {
    http::SendRpcError(res, 406, kServerError,
                       "Not Acceptable: Accept must list application/json and text/event-stream");
    return;
  }
  if (http::MediaType(req.get_header_value("Content-Type")) != "application/json") {
    http::SendRpcError(res, 415, kServerError,
                       "Unsupported Media Type: Content-Type must be application/json");
    return;
  }
  if (req.body.size() > options_.max_body_bytes) {
    http::SendRpcError(
        res, 413, kServerError,
        "Payload Too Large: the limit is " + std::to_string(options_.max_body_bytes) + " bytes");
    return;
  }
  auto parsed = mcp::ParseJsonText(req.body);
  if (!parsed.ok()) {
    http::SendRpcError(res, 400, kParseError, mcp::RpcParseError(parsed.error()));
    return;
  }
  json message = std::move(parsed).value();
  // Read after the body, so that the refusal can name the request's id (2026-07-28 wants every
  // error to echo it).
  std::optional<std::string> header_version;
  if (req.has_header(kVersionHeader)) {
    header_version = std::string(http::Trim(req.get_header_value(kVersionHeader)));
  }
  if (header_version && !mcp::IsSupportedProtocolVersion(*header_version) &&
      !mcp::IsModernProtocolVersion(*header_version)) {
    http::SendRpcError(res, 400, mcp::rpc_code::kUnsupportedProtocolVersion,
                       "Unsupported protocol version: MCP-Protocol-Version " + *header_version,
                       IdOf(message), mcp::UnsupportedVersionData(*header_version));
    return;
  }
  if (IsModernPost(req, message, header_version)) {
    HandleModernPost(req, std::move(message), res);
    return;
  }

  if (IsInitialize(message)) {
    std::pair<int, std::string> refusal;
    auto session = CreateSession(PrincipalOf(req), refusal);
    if (session == nullptr) {
      res.set_header("Retry-After", "1");
      http::SendRpcError(res, refusal.first, kServerError, refusal.second);
      return;
    }
    mcp::NullOutbound out;
    auto response = dispatcher_.Handle(session->mcp, message, out);
    if (!response || response->contains("error")) {
      RemoveSession(session->id);
      if (!response) {
        res.status = 202;
        return;
      }
      http::SendJson(res, 200, *response);  // a JSON-RPC error, e.g. invalid params
      return;
    }
    res.set_header(kSessionHeader, session->id);
    http::SendJson(res, 200, *response);
    return;
  }
  if (message.is_array()) {
    for (const auto& member : message) {
      if (IsInitialize(member)) {
        http::SendRpcError(res, 400, kInvalidRequest,
                           "Invalid Request: initialize must not be part of a batch");
        return;
      }
    }
  }

  if (!req.has_header(kSessionHeader)) {
    http::SendRpcError(res, 400, kServerError,
                       "Bad Request: Mcp-Session-Id header is required (send initialize first, "
                       "or name protocol version 2026-07-28 in MCP-Protocol-Version and _meta)",
                       IdOf(message));
    return;
  }
  auto session = FindSession(req.get_header_value(kSessionHeader), PrincipalOf(req));
  if (session == nullptr) {
    http::SendRpcError(res, 404, kSessionNotFound, "Session not found", IdOf(message));
    return;
  }

  if (message.is_array()) {
    mcp::NullOutbound out;
    auto response = dispatcher_.HandleBatch(session->mcp, message, out);
    if (!response) {
      res.status = 202;
      return;
    }
    http::SendJson(res, 200, *response);
    return;
  }
  if (!IsRequest(message)) {
    // Notifications and client responses; an invalid envelope gets its error with 400.
    mcp::NullOutbound out;
    auto response = dispatcher_.Handle(session->mcp, message, out);
    if (response) {
      http::SendJson(res, 400, *response);
      return;
    }
    res.status = 202;
    return;
  }
  if (mcp::Dispatcher::IsLongRunning(message)) {
    StreamCall(std::shared_ptr<mcp::Session>(session, &session->mcp), std::nullopt,
               std::move(message), res);
    return;
  }
  mcp::NullOutbound out;
  auto response = dispatcher_.Handle(session->mcp, message, out);
  if (!response) {
    res.status = 202;
    return;
  }
  http::SendJson(res, 200, *response);
}

void StreamableHttpTransport::HandleModernPost(const httplib::Request& req, json message,
                                               httplib::Response& res) {
  const json id = IdOf(message);
  if (!message.is_object()) {
    http::SendRpcError(res, 400, kInvalidRequest,
                       "Invalid Request: protocol version 2026-07-28 has no JSON-RPC batches; "
                       "send one message per POST");
    return;
  }
  if (!req.has_header(kVersionHeader)) {
    http::SendRpcError(res, 400, mcp::rpc_code::kHeaderMismatch,
                       "Header mismatch: the MCP-Protocol-Version header is required", id);
    return;
  }
  HeaderLookup header = [&req](std::string_view name) -> std::optional<std::string> {
    std::string key(name);
    if (!req.has_header(key)) return std::nullopt;
    return req.get_header_value(key);
  };
  if (auto mismatch = CheckMcpHeaders(header, message, mcp::MetaProtocolVersion(message))) {
    http::SendRpcError(res, 400, mcp::rpc_code::kHeaderMismatch, *mismatch, id);
    return;
  }
  // The envelope and _meta, read once: a refusal with its HTTP status, or the request's _meta.
  mcp::ModernCheck check = dispatcher_.CheckModern(message);
  if (check.refusal) {
    http::SendJson(res, check.http_status, *check.refusal);
    return;
  }
  if (!check.meta) {
    // Notifications mean nothing over HTTP in this revision (cancelling is closing the stream);
    // client responses have no request to answer.
    res.status = 202;
    return;
  }
  // No transport session: the request is served on its own, its calls registered in a
  // throwaway record that lives as long as the request.
  auto calls = std::make_shared<mcp::Session>(PrincipalOf(req));
  if (mcp::Dispatcher::IsLongRunning(message)) {
    StreamCall(calls, std::move(check.meta), std::move(message), res);
    return;
  }
  mcp::NullOutbound out;
  auto response = dispatcher_.HandleModern(*calls, message, *check.meta, out);
  if (!response) {
    res.status = 202;
    return;
  }
  http::SendJson(res, mcp::Dispatcher::ModernHttpStatus(*response), *response);
}

void StreamableHttpTransport::StreamCall(const std::shared_ptr<mcp::Session>& session,
                                         std::optional<mcp::RequestMeta> modern, json message,
                                         httplib::Response& res) {
  const json id = message["id"];
  std::shared_ptr<SlotLimiter::Slot> slot;
  if (options_.stream_slots) {
    SlotLimiter::Refusal why = SlotLimiter::Refusal::kNone;
    slot = options_.stream_slots->TryAcquire(session->principal(), &why);
    if (!slot) {
      detail::SendTooManyStreams(res, *options_.stream_slots, why, id);
      return;
    }
  }
  auto channel = std::make_shared<http::SseChannel>();
  // The stream is the only way the result can reach the client: when it goes, cancel the run.
  std::weak_ptr<mcp::Session> weak = session;
  channel->OnAbandon([weak, id, logger = logger_] {
    if (auto s = weak.lock(); s && s->CancelRequest(id)) {
      logger->info("request {}: the client dropped its stream; run cancelled", mcp::IdKey(id));
    }
  });
  bool spawned = tasks_.Spawn(
      [this, session, modern = std::move(modern), channel, message = std::move(message)] {
        detail::SseOutbound out(channel);
        auto response = modern ? dispatcher_.HandleModern(*session, message, *modern, out)
                               : dispatcher_.Handle(*session, message, out);
        if (response) {
          channel->Push(http::FormatSseEvent("message", mcp::DumpJson(*response)));
        }
        channel->Close();
      });
  if (!spawned) {
    http::SendRpcError(res, 503, kServerError,
                       "Service Unavailable: too many tool calls in flight; retry later", id);
    return;
  }
  http::ServeSse(res, channel, options_.sse, std::move(slot));
}

void StreamableHttpTransport::HandleDelete(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_header(kSessionHeader)) {
    // Only a legacy session can be ended; 2026-07-28 has none (its rule for DELETE is 405).
    res.set_header("Allow", "POST, DELETE");
    http::SendRpcError(res, 405, kServerError,
                       "Method Not Allowed: DELETE ends a session named by Mcp-Session-Id; "
                       "protocol version 2026-07-28 has no sessions");
    return;
  }
  const std::string id = req.get_header_value(kSessionHeader);
  if (FindSession(id, PrincipalOf(req)) == nullptr) {
    http::SendRpcError(res, 404, kSessionNotFound, "Session not found");
    return;
  }
  RemoveSession(id);
  logger_->info("session ended by the client");
  res.status = 200;
}

}  // namespace sandbox::transport
