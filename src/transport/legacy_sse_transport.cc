#include "sandbox/transport/legacy_sse_transport.h"

#include <httplib.h>

#include "http_common.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/mcp/json_rpc.h"
#include "sandbox/mcp/random_id.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;
using mcp::rpc_code::kParseError;
using mcp::rpc_code::kServerError;
using mcp::rpc_code::kSessionNotFound;

}  // namespace

LegacySseTransport::LegacySseTransport(mcp::Dispatcher& dispatcher, const LegacySseOptions& options,
                                       std::shared_ptr<spdlog::logger> logger)
    : dispatcher_(dispatcher),
      options_(options),
      logger_(std::move(logger)),
      tasks_(options.max_concurrent_calls) {}

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

std::size_t LegacySseTransport::session_count() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void LegacySseTransport::RemoveSession(const std::string& id) {
  std::shared_ptr<LegacySession> session;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    session = it->second;
    sessions_.erase(it);
  }
  session->mcp.End();
  session->channel->Close();
}

void LegacySseTransport::Shutdown() {
  if (shutting_down_.exchange(true)) return;
  std::map<std::string, std::shared_ptr<LegacySession>> sessions;
  {
    std::lock_guard lock(mu_);
    sessions.swap(sessions_);
  }
  for (auto& [id, session] : sessions) {
    session->mcp.End();
    session->channel->Close();
  }
  tasks_.Wait();
}

std::string LegacySseTransport::PrincipalOf(const httplib::Request& req) const {
  return detail::PrincipalOf(options_.principal, req);
}

void LegacySseTransport::HandleStream(const httplib::Request& req, httplib::Response& res) {
  if (shutting_down_.load()) {
    http::SendRpcError(res, 503, kServerError, "Service Unavailable: the server is stopping");
    return;
  }
  std::shared_ptr<SlotLimiter::Slot> slot;
  if (options_.stream_slots) {
    SlotLimiter::Refusal why = SlotLimiter::Refusal::kNone;
    slot = options_.stream_slots->TryAcquire(PrincipalOf(req), &why);
    if (!slot) {
      detail::SendTooManyStreams(res, *options_.stream_slots, why);
      return;
    }
  }
  auto session = std::make_shared<LegacySession>(PrincipalOf(req));
  session->id = mcp::RandomHexId(32);
  session->channel = std::make_shared<http::SseChannel>();
  {
    std::lock_guard lock(mu_);
    if (sessions_.size() >= options_.max_sessions) {
      http::SendRpcError(res, 503, kServerError, "Service Unavailable: too many sessions");
      return;
    }
    sessions_.emplace(session->id, session);
  }
  // Relative, so the client resolves it against the URL it used (the TS client refuses another
  // origin).
  session->channel->Push(
      http::FormatSseEvent("endpoint", messages_path_ + "?sessionId=" + session->id));
  const std::string id = session->id;
  session->channel->OnAbandon([this, id] {
    logger_->info("legacy SSE stream closed by the client; session ended");
    RemoveSession(id);
  });
  http::ServeSse(res, session->channel, options_.sse, std::move(slot));
}

void LegacySseTransport::HandleMessage(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("sessionId")) {
    http::SendRpcError(res, 400, kServerError, "Bad Request: sessionId query parameter required");
    return;
  }
  std::shared_ptr<LegacySession> session;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(req.get_param_value("sessionId"));
    if (it != sessions_.end()) session = it->second;
  }
  if (session != nullptr && session->mcp.principal() != PrincipalOf(req)) session = nullptr;
  if (session == nullptr) {
    http::SendRpcError(res, 404, kSessionNotFound, "Session not found");
    return;
  }
  if (http::MediaType(req.get_header_value("Content-Type")) != "application/json") {
    http::SendRpcError(res, 415, kServerError,
                       "Unsupported Media Type: Content-Type must be application/json");
    return;
  }
  if (req.body.size() > options_.max_body_bytes) {
    http::SendRpcError(res, 413, kServerError, "Payload Too Large");
    return;
  }
  auto parsed = mcp::ParseJsonText(req.body);
  if (!parsed.ok()) {
    http::SendRpcError(res, 400, kParseError, mcp::RpcParseError(parsed.error()));
    return;
  }
  json message = std::move(parsed).value();
  auto channel = session->channel;
  if (mcp::Dispatcher::IsLongRunning(message)) {
    bool spawned = tasks_.Spawn([this, session, channel, message] {
      detail::SseOutbound out(channel);
      if (auto response = dispatcher_.Handle(session->mcp, message, out)) out.Send(*response);
    });
    if (!spawned) {
      http::SendRpcError(res, 503, kServerError,
                         "Service Unavailable: too many tool calls in flight; retry later");
      return;
    }
  } else {
    detail::SseOutbound out(channel);
    auto response = message.is_array() ? dispatcher_.HandleBatch(session->mcp, message, out)
                                       : dispatcher_.Handle(session->mcp, message, out);
    if (response) out.Send(*response);
  }
  res.status = 202;
  res.set_content("Accepted", "text/plain");
}

}  // namespace sandbox::transport
