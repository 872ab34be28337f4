#include "sandbox/transport/legacy_sse_transport.h"

#include <httplib.h>

#include "http_common.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;
using jsonrpc::rpc_code::kServerError;
using jsonrpc::rpc_code::kSessionNotFound;

}  // namespace

LegacySseTransport::LegacySseTransport(mcp::Dispatcher& dispatcher, const LegacySseOptions& options,
                                       std::shared_ptr<spdlog::logger> logger)
    : core_(dispatcher, options.http, options.sessions, std::move(logger)) {}

LegacySseTransport::~LegacySseTransport() { Shutdown(); }

void LegacySseTransport::Register(httplib::Server& server, const std::string& sse_path,
                                  const std::string& messages_path) {
  messages_path_ = messages_path;
  server.Get(sse_path, [this](const httplib::Request& req, httplib::Response& res) {
    HandleStream(req, res);
  });
  server.Post(messages_path, [this](const httplib::Request& req, httplib::Response& res) {
    HandleMessage(req, res);
  });
}

std::size_t LegacySseTransport::session_count() const { return core_.sessions().size(); }

void LegacySseTransport::Shutdown() { core_.Stop(); }

std::string LegacySseTransport::PrincipalOf(const httplib::Request& req) const {
  return detail::PrincipalOf(core_.options().principal, req);
}

void LegacySseTransport::HandleStream(const httplib::Request& req, httplib::Response& res) {
  if (core_.stopping()) {
    http::SendRpcError(res, 503, kServerError, "Service Unavailable: the server is stopping");
    return;
  }
  const std::string principal = PrincipalOf(req);
  std::shared_ptr<SlotLimiter::Slot> slot;
  if (!detail::TakeStreamSlot(core_.options().stream_slots, principal, res, slot)) return;
  auto opened = core_.sessions().Open(
      principal,
      std::make_shared<http::SseChannel>(core_.options().sse_queue, detail::LegacyLastEvent));
  if (opened.session == nullptr) {  // the bound on all sessions (by default the only one)
    http::SendRpcError(res, 503, kServerError, "Service Unavailable: too many sessions");
    return;
  }
  const auto& session = opened.session;
  // Relative, so the client resolves it against the URL it used (the TS client refuses another
  // origin).
  session->channel->Push(
      http::FormatSseEvent("endpoint", messages_path_ + "?sessionId=" + session->id));
  const std::string id = session->id;
  std::weak_ptr<http::SseChannel> weak = session->channel;
  session->channel->OnAbandon([this, id, weak] {
    auto channel = weak.lock();
    if (channel && channel->overflowed()) {
      core_.logger()->warn(
          "legacy SSE stream: the client fell behind (memory.stream_queue_bytes); stream and "
          "session ended");
    } else {
      core_.logger()->info("legacy SSE stream closed by the client; session ended");
    }
    core_.EndSession(id);
  });
  http::ServeSse(res, session->channel, core_.options().sse, std::move(slot));
}

void LegacySseTransport::HandleMessage(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("sessionId")) {
    http::SendRpcError(res, 400, kServerError, "Bad Request: sessionId query parameter required");
    return;
  }
  auto session = core_.sessions().Find(req.get_param_value("sessionId"), PrincipalOf(req));
  if (session == nullptr) {
    http::SendRpcError(res, 404, kSessionNotFound, "Session not found");
    return;
  }
  auto body = detail::ReadJsonBody(req, res, core_.options().max_body_bytes, "Payload Too Large");
  if (!body) return;
  json message = std::move(*body);
  auto channel = session->channel;
  if (mcp::Dispatcher::IsLongRunning(message)) {
    bool spawned = core_.tasks().Spawn([this, session, channel, message] {
      detail::SseOutbound out(channel);
      auto response = core_.dispatcher().Handle(session->mcp, message, out);
      if (response) out.Send(*response);
    });
    if (!spawned) {
      http::SendRpcError(res, 503, kServerError,
                         "Service Unavailable: too many tool calls in flight; retry later");
      return;
    }
  } else {
    detail::SseOutbound out(channel);
    auto response = message.is_array() ? core_.dispatcher().HandleBatch(session->mcp, message, out)
                                       : core_.dispatcher().Handle(session->mcp, message, out);
    if (response) out.Send(*response);
  }
  res.status = 202;
  res.set_content("Accepted", "text/plain");
}

}  // namespace sandbox::transport
