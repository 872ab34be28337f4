#include "sandbox/transport/streamable_http_transport.h"

#include <httplib.h>

#include <optional>

#include "http_common.h"
#include "mcp_headers.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/protocol_version.h"
#include "sandbox/mcp/request_meta.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;
using jsonrpc::rpc_code::kInvalidRequest;
using jsonrpc::rpc_code::kServerError;
using jsonrpc::rpc_code::kSessionNotFound;

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
    : core_(dispatcher, options.http, options.sessions, std::move(logger)) {}

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
  return detail::PrincipalOf(core_.options().principal, req);
}

std::shared_ptr<TransportSession> StreamableHttpTransport::CreateSession(
    std::string principal, std::pair<int, std::string>& refusal) {
  auto opened = core_.sessions().Open(std::move(principal));
  switch (opened.refusal) {
    case SessionRefusal::kNone:
      break;
    case SessionRefusal::kPrincipalBusy:
      refusal = {429, "Too Many Requests: this token has " +
                          std::to_string(opened.principal_sessions) +
                          " MCP sessions with calls in flight, the most one token may hold "
                          "(per_principal.max_mcp_sessions); end one (DELETE) or retry later"};
      return nullptr;
    case SessionRefusal::kFull:
      refusal = {503,
                 "Service Unavailable: " + std::to_string(core_.sessions().options().max_sessions) +
                     " MCP sessions are open, the most this server holds "
                     "(server.max_mcp_sessions); retry later"};
      return nullptr;
  }
  if (opened.evicted) {
    core_.logger()->info(
        "MCP session limit of the principal reached: its least recently used "
        "session ended");
  }
  return opened.session;
}

std::size_t StreamableHttpTransport::session_count() const { return core_.sessions().size(); }

void StreamableHttpTransport::Shutdown() { core_.Stop(); }

void StreamableHttpTransport::HandlePost(const httplib::Request& req, httplib::Response& res) {
  if (core_.stopping()) {
    http::SendRpcError(res, 503, kServerError, "Service Unavailable: the server is stopping");
    return;
  }
  const std::string accept = req.get_header_value("Accept");
  if (!http::Accepts(accept, "application/json") || !http::Accepts(accept, "text/event-stream")) {
    http::SendRpcError(res, 406, kServerError,
                       "Not Acceptable: Accept must list application/json and text/event-stream");
    return;
  }
  const std::size_t limit = core_.options().max_body_bytes;
  auto body = detail::ReadJsonBody(
      req, res, limit, "Payload Too Large: the limit is " + std::to_string(limit) + " bytes");
  if (!body) return;
  json message = std::move(*body);
  // Read after the body, so that the refusal can name the request's id (2026-07-28 wants every
  // error to echo it).
  std::optional<std::string> header_version;
  if (req.has_header(kVersionHeader)) {
    header_version = std::string(http::Trim(req.get_header_value(kVersionHeader)));
  }
  if (header_version && !mcp::IsSupportedProtocolVersion(*header_version) &&
      !mcp::IsModernProtocolVersion(*header_version)) {
    http::SendRpcError(res, 400, jsonrpc::rpc_code::kUnsupportedProtocolVersion,
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
    auto response = core_.dispatcher().Handle(session->mcp, message, out);
    if (!response || response->contains("error")) {
      core_.EndSession(session->id);
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
  auto session = core_.sessions().Find(req.get_header_value(kSessionHeader), PrincipalOf(req));
  if (session == nullptr) {
    http::SendRpcError(res, 404, kSessionNotFound, "Session not found", IdOf(message));
    return;
  }

  if (message.is_array()) {
    mcp::NullOutbound out;
    auto response = core_.dispatcher().HandleBatch(session->mcp, message, out);
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
    auto response = core_.dispatcher().Handle(session->mcp, message, out);
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
  auto response = core_.dispatcher().Handle(session->mcp, message, out);
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
    http::SendRpcError(res, 400, jsonrpc::rpc_code::kHeaderMismatch,
                       "Header mismatch: the MCP-Protocol-Version header is required", id);
    return;
  }
  HeaderLookup header = [&req](std::string_view name) -> std::optional<std::string> {
    std::string key(name);
    if (!req.has_header(key)) return std::nullopt;
    return req.get_header_value(key);
  };
  if (auto mismatch = CheckMcpHeaders(header, message, mcp::MetaProtocolVersion(message))) {
    http::SendRpcError(res, 400, jsonrpc::rpc_code::kHeaderMismatch, *mismatch, id);
    return;
  }
  // The envelope and _meta, read once: a refusal with its HTTP status, or the request's _meta.
  mcp::ModernCheck check = core_.dispatcher().CheckModern(message);
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
  auto response = core_.dispatcher().HandleModern(*calls, message, *check.meta, out);
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
  if (!detail::TakeStreamSlot(core_.options().stream_slots, session->principal(), res, slot, id)) {
    return;
  }
  auto channel =
      std::make_shared<http::SseChannel>(core_.options().sse_queue, detail::CallLastEvent(id));
  // The stream is the only way the result can reach the client: when it goes, or its reader
  // falls behind, cancel the run.
  std::weak_ptr<mcp::Session> weak = session;
  std::weak_ptr<http::SseChannel> weak_channel = channel;
  channel->OnAbandon([weak, weak_channel, id, logger = core_.logger()] {
    auto c = weak_channel.lock();
    const bool behind = c && c->overflowed();
    if (auto s = weak.lock(); s && s->CancelRequest(id)) {
      logger->info("request {}: {}; run cancelled", jsonrpc::IdForLog(id),
                   behind ? "the client fell behind on its stream (memory.stream_queue_bytes)"
                          : "the client dropped its stream");
    }
  });
  bool spawned = core_.tasks().Spawn(
      [this, session, modern = std::move(modern), channel, message = std::move(message)] {
        detail::SseOutbound out(channel);
        auto response = modern ? core_.dispatcher().HandleModern(*session, message, *modern, out)
                               : core_.dispatcher().Handle(*session, message, out);
        if (response) {
          // The document goes before the event is framed: two copies of a large answer at
          // once, not three (docs/memory-budget.md).
          std::string text = jsonrpc::DumpJson(*response);
          response.reset();
          channel->Push(http::FormatSseEvent("message", text));
        }
        channel->Close();
      });
  if (!spawned) {
    http::SendRpcError(res, 503, kServerError,
                       "Service Unavailable: too many tool calls in flight; retry later", id);
    return;
  }
  http::ServeSse(res, channel, core_.options().sse, std::move(slot));
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
  if (core_.sessions().Find(id, PrincipalOf(req)) == nullptr) {
    http::SendRpcError(res, 404, kSessionNotFound, "Session not found");
    return;
  }
  core_.EndSession(id);
  core_.logger()->info("session ended by the client");
  res.status = 200;
}

}  // namespace sandbox::transport
