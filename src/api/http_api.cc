#include "sandbox/api/http_api.h"

#include <httplib.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "execute.h"
#include "openapi.h"
#include "sandbox/core/json.h"
#include "sandbox/core/log_context.h"
#include "sandbox/core/log_safe.h"
#include "sandbox/core/utf8.h"
#include "sandbox/exec/run_result_json.h"
#include "sandbox/exec/session_json.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/run_registry.h"
#include "sandbox/http/sse_channel.h"

namespace sandbox::api {

using json = nlohmann::json;

namespace {

class NullObserver final : public exec::RunObserver {};

using http::SendJson;

void SendApiError(httplib::Response& res, const ApiError& error) {
  if (error.retry_after_s > 0) res.set_header("Retry-After", std::to_string(error.retry_after_s));
  SendJson(res, error.status, ErrorBody(error));
}

void SendSnekboxError(httplib::Response& res, std::string_view title, const ApiError& error) {
  if (error.retry_after_s > 0) res.set_header("Retry-After", std::to_string(error.retry_after_s));
  SendJson(res, error.status, SnekboxErrorBody(title, error));
}

// The in-flight byte budget had no room for a run's answer in time (exec::ReserveAnswer).
ApiError AnswerRefused(const Error& error, int retry_after_s) {
  ApiError refused;
  refused.status = 503;
  refused.message = error.message();
  refused.retry_after_s = retry_after_s;
  return refused;
}

ApiError ShuttingDown() {
  ApiError error;
  error.status = 503;
  error.message = "the server is shutting down";
  return error;
}

// 503 past the server's bound on streams and runs (server.max_streams), 429 past the
// principal's share of it (per_principal.max_streams).
ApiError TooManyStreams(const SlotLimiter& limiter, SlotLimiter::Refusal why) {
  ApiError error;
  error.status = why == SlotLimiter::Refusal::kPerKey ? 429 : 503;
  error.message = limiter.RefusalMessage(why, "streams and runs");
  error.retry_after_s = 1;
  return error;
}

ApiError UnsupportedMediaType(const httplib::Request& req) {
  ApiError error;
  error.status = 415;
  error.message = req.get_header_value("Content-Type") +
                  " is an unsupported media type (send application/json)";
  return error;
}

std::optional<json> ParseBody(const httplib::Request& req, ApiError& error) {
  if (req.body.empty()) {
    error.status = 400;
    error.message = "the body is empty; expected a JSON object";
    return std::nullopt;
  }
  auto body = ParseJson(req.body);
  if (!body.ok()) {
    error.status = 400;
    error.message = "the body is not valid JSON: " + body.error().message();
    return std::nullopt;
  }
  return std::move(body).value();
}

// OPTIONS: 200, the methods in Allow, no body. /eval says "POST", exactly as Snekbox's
// framework (Falcon) does.
void AllowedMethods(const httplib::Request&, httplib::Response& res) {
  res.status = 200;
  res.set_header("Allow", "POST, OPTIONS");
}

void EvalAllowedMethods(const httplib::Request&, httplib::Response& res) {
  res.status = 200;
  res.set_header("Allow", "POST");
}

void EvalMethodNotAllowed(const httplib::Request&, httplib::Response& res) {
  res.set_header("Allow", "POST");
  ApiError error;
  error.status = 405;
  error.message = "use POST";
  SendSnekboxError(res, "405 Method Not Allowed", error);
}

void MethodNotAllowed(const httplib::Request&, httplib::Response& res) {
  res.set_header("Allow", "POST, OPTIONS");
  ApiError error;
  error.status = 405;
  error.message = "use POST";
  SendJson(res, 405, ErrorBody(error));
}

// Shared between the handler, the run's thread and the response writing the stream (ServeSse
// holds it until the response is gone).
struct StreamState {
  explicit StreamState(const http::SseChannelLimits& limits)
      : channel(std::make_shared<http::SseChannel>(limits, LastEvent)) {}
  // A reader that fell behind gets the stream's `error` event, then the stream ends.
  static std::string LastEvent(const std::string& reason) {
    return SseEvent("error", json{{"error", reason}, {"field", nullptr}, {"status", 503}});
  }
  // The events, written by http::ServeSse.
  std::shared_ptr<http::SseChannel> channel;
  // The handler waits on these until the run starts, so a refusal before that is a plain HTTP
  // error rather than a stream.
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  bool finished = false;  // the last event (result or error) is queued
  std::optional<ApiError> refusal;
  std::shared_ptr<exec::CancelToken> cancel;
  std::shared_ptr<SlotLimiter::Slot> slot;  // held while the stream is open
  std::thread thread;  // runs the run; captures a raw pointer to this state, never owns it

  ~StreamState() {
    if (!thread.joinable()) return;
    bool done = false;
    {
      std::lock_guard lock(mu);
      done = finished;
    }
    if (!done) cancel->Cancel();
    thread.join();
  }

  void Push(const std::string& event) { channel->Push(event); }
};

class StreamObserver final : public exec::RunObserver {
 public:
  explicit StreamObserver(StreamState& state) : state_(state) {}
  void OnStarted() override {
    {
      std::lock_guard lock(state_.mu);
      state_.started = true;
    }
    state_.cv.notify_all();
  }
  void OnOutput(exec::Stream stream, std::string_view bytes) override {
    const bool out = stream == exec::Stream::kStdout;
    Emit(out ? "stdout" : "stderr", (out ? stdout_ : stderr_).Feed(bytes));
  }
  void OnImage(const exec::Image& image) override {
    state_.Push(SseEvent("image", exec::RunImageJson(image)));
  }
  void OnFile(const exec::OutputFile& file) override {
    state_.Push(SseEvent("file", exec::RunFileJson(file)));
  }
  // Incomplete characters left at the end of the output.
  void Flush() {
    Emit("stdout", stdout_.Flush());
    Emit("stderr", stderr_.Flush());
  }

 private:
  void Emit(std::string_view name, const std::string& text) {
    if (!text.empty()) state_.Push(SseEvent(name, json{{"text", text}}));
  }
  StreamState& state_;
  Utf8StreamDecoder stdout_;
  Utf8StreamDecoder stderr_;
};

}  // namespace

HttpApi::HttpApi(exec::ExecutionService& service, ApiOptions options,
                 std::shared_ptr<spdlog::logger> logger)
    : HttpApi(service, nullptr, std::move(options), std::move(logger)) {}

HttpApi::HttpApi(exec::ExecutionService& service, exec::SessionService* sessions,
                 ApiOptions options, std::shared_ptr<spdlog::logger> logger)
    : service_(service),
      sessions_(sessions),
      options_(std::move(options)),
      logger_(std::move(logger)),
      registry_(std::make_shared<http::RunRegistry>()) {}

HttpApi::~HttpApi() { Shutdown(); }

void HttpApi::Shutdown() { registry_->Shutdown(); }

std::size_t HttpApi::active_runs() const { return registry_->size(); }

std::string HttpApi::Principal(const httplib::Request& req) const {
  if (!options_.principal) return std::string(http::kLocalPrincipal);
  return options_.principal(req.get_header_value("Authorization"));
}

void HttpApi::Register(httplib::Server& server) {
  server.Get("/openapi.json", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, OpenApiDocument(options_));
  });
  server.Get("/eval", EvalMethodNotAllowed);
  server.Get("/v1/execute", MethodNotAllowed);
  server.Options("/eval", EvalAllowedMethods);
  server.Options("/v1/execute", AllowedMethods);

  server.Post("/eval", [this](const httplib::Request& req, httplib::Response& res) {
    if (!http::IsJsonBody(req)) {
      ApiError error = UnsupportedMediaType(req);
      // Snekbox's exact sentence: a client may match on it.
      error.message = req.get_header_value("Content-Type") + " is an unsupported media type.";
      return SendSnekboxError(res, "415 Unsupported Media Type", error);
    }
    ApiError error;
    auto body = ParseBody(req, error);
    if (!body) return SendSnekboxError(res, "Invalid JSON", error);
    EvalPlan plan;
    if (auto refused = ParseEvalRequest(*body, plan)) {
      return SendSnekboxError(res, refused->title, *refused);
    }
    if (!plan.executable.empty()) {
      auto pool = service_.PoolForExecutable(plan.executable);
      if (!pool.ok()) {
        ApiError refused = FromEngineError(pool.error(), options_.retry_after_s);
        // Snekbox's words for a path it has no interpreter at, then which ones there are.
        constexpr std::string_view kPrefix = "executable_path: ";
        if (refused.message.rfind(kPrefix, 0) == 0) {
          refused.message =
              "executable_path does not exist: " + refused.message.substr(kPrefix.size());
        }
        refused.field = "executable_path";
        return SendSnekboxError(res, "Request data failed validation", refused);
      }
      plan.request.pool = std::move(*pool);
    }
    if (plan.immediate_failure) return SendJson(res, 200, EvalFailure(*plan.immediate_failure));
    SlotLimiter::Refusal why = SlotLimiter::Refusal::kNone;
    auto slot = TakeSlot(Principal(req), why);
    if (options_.stream_slots && !slot) {
      ApiError refused = TooManyStreams(*options_.stream_slots, why);
      return SendSnekboxError(
          res, refused.status == 429 ? "429 Too Many Requests" : "503 Service Unavailable",
          refused);
    }
    http::RunRegistry::Entry run(registry_);
    if (!run.ok()) return SendSnekboxError(res, "503 Service Unavailable", ShuttingDown());
    OutputMerger merger;
    plan.request.principal = Principal(req);
    auto result = service_.Run(plan.request, merger, run.token());
    if (!result.ok()) {
      ApiError refused = FromEngineError(result.error(), options_.retry_after_s);
      if (refused.status == 400)
        return SendSnekboxError(res, "Request data failed validation", refused);
      if (refused.status == 429) return SendSnekboxError(res, "429 Too Many Requests", refused);
      if (refused.status == 503 && refused.retry_after_s > 0) {
        return SendSnekboxError(res, "503 Service Unavailable", refused);
      }
      // Snekbox's answer when the sandbox itself fails: returncode null, the reason in stdout.
      logger_->warn("POST /eval: the engine refused: {}",
                    LogQuoted(result.error().ToString(), 1024));
      return SendJson(res, 200, EvalFailure(refused.message));
    }
    logger_->debug("POST /eval: verdict {} in {} ms", exec::VerdictName(result->verdict),
                   result->duration_ms);
    // Merged from the output as the run wrote it, before ReserveAnswer bounds the result's.
    std::string merged = merger.Merged(*result);
    auto held = exec::ReserveAnswer(options_.answers, *result);
    if (!held.ok()) {
      logger_->warn("POST /eval: {}", held.error().message());
      return SendSnekboxError(res, "503 Service Unavailable",
                              AnswerRefused(held.error(), options_.retry_after_s));
    }
    http::SendJsonHeld(res, 200,
                       EvalResponse(*result, std::move(merged), options_.eval_names_engine),
                       std::move(*held));
  });

  server.Post("/v1/execute", [this](const httplib::Request& req, httplib::Response& res) {
    if (!http::IsJsonBody(req)) return SendApiError(res, UnsupportedMediaType(req));
    ApiError error;
    auto body = ParseBody(req, error);
    if (!body) return SendApiError(res, error);
    exec::RunRequest request;
    std::string session_id;
    if (auto refused = ParseExecuteRequest(*body, options_.max_code_bytes, request, session_id)) {
      return SendApiError(res, *refused);
    }
    const bool in_session = !session_id.empty();
    request.principal = Principal(req);
    if (in_session && sessions_ == nullptr) {
      ApiError refused;
      refused.field = "session_id";
      refused.message =
          "session_id: sessions are disabled on this server (sessions.enabled is false); omit "
          "session_id (each request then runs in a fresh interpreter)";
      return SendApiError(res, refused);
    }
    RunFunction run_function;
    if (in_session) {
      run_function = [sessions = sessions_, principal = Principal(req), session_id,
                      request = std::move(request)](exec::RunObserver& observer,
                                                    const exec::CancelToken& cancel) {
        auto result = sessions->Run(principal, session_id, request, observer, cancel);
        if (result.ok() && result->session_id.empty()) result->session_id = session_id;
        return result;
      };
    } else {
      run_function = [&service = service_, request = std::move(request)](
                         exec::RunObserver& observer, const exec::CancelToken& cancel) {
        return service.Run(request, observer, cancel);
      };
    }
    SlotLimiter::Refusal why = SlotLimiter::Refusal::kNone;
    auto slot = TakeSlot(Principal(req), why);
    if (options_.stream_slots && !slot) {
      return SendApiError(res, TooManyStreams(*options_.stream_slots, why));
    }
    if (http::Lists(req.get_header_value("Accept"), "text/event-stream")) {
      return ServeStream(std::move(run_function), in_session, res, std::move(slot));
    }
    http::RunRegistry::Entry run(registry_);
    if (!run.ok()) return SendApiError(res, ShuttingDown());
    NullObserver observer;
    auto result = run_function(observer, run.token());
    if (!result.ok()) {
      ApiError refused = in_session ? FromSessionError(result.error(), options_.retry_after_s, 429)
                                    : FromEngineError(result.error(), options_.retry_after_s);
      if (refused.status >= 500) {
        logger_->warn("POST /v1/execute: the engine refused: {}",
                      LogQuoted(RedactSessionId(result.error().ToString(), session_id), 1024));
      }
      return SendApiError(res, refused);
    }
    logger_->debug("POST /v1/execute: verdict {} in {} ms", exec::VerdictName(result->verdict),
                   result->duration_ms);
    auto held = exec::ReserveAnswer(options_.answers, *result);
    if (!held.ok()) {
      logger_->warn("POST /v1/execute: {}", held.error().message());
      return SendApiError(res, AnswerRefused(held.error(), options_.retry_after_s));
    }
    http::SendJsonHeld(res, 200, exec::RunResultJson(*result, exec::RunResultShape::kComplete),
                       std::move(*held));
  });

  RegisterSessions(server);
}

std::shared_ptr<SlotLimiter::Slot> HttpApi::TakeSlot(const std::string& principal,
                                                     SlotLimiter::Refusal& why) const {
  return options_.stream_slots ? options_.stream_slots->TryAcquire(principal, &why) : nullptr;
}

void HttpApi::ServeStream(RunFunction run, bool in_session, httplib::Response& res,
                          std::shared_ptr<SlotLimiter::Slot> slot) {
  auto registration = std::make_shared<http::RunRegistry::Entry>(registry_);
  if (!registration->ok()) return SendApiError(res, ShuttingDown());
  auto state = std::make_shared<StreamState>(options_.sse_queue);
  state->cancel = registration->shared_token();
  state->slot = std::move(slot);
  // The peer went away (a failed write, or a closed connection at a wake-up): the run is
  // cancelled, and the engine ends it within a second.
  state->channel->OnAbandon(
      [logger = logger_, cancel = state->cancel, weak = std::weak_ptr(state->channel)] {
        auto channel = weak.lock();
        logger->info("POST /v1/execute: {}; cancelling the run",
                     channel && channel->overflowed()
                         ? "the client fell behind on its stream (memory.stream_queue_bytes)"
                         : "the client went away");
        cancel->Cancel();
      });
  StreamState* raw = state.get();
  const int retry_after_s = options_.retry_after_s;
  auto logger = logger_;
  state->thread = std::thread([logger, raw, registration, retry_after_s, in_session,
                               run = std::move(run), answers = options_.answers,
                               request_id = std::string(CurrentRequestId())]() mutable {
    const ScopedRequestId scoped(request_id);  // the run's log lines name its request
    StreamObserver observer(*raw);
    auto result = run(observer, *raw->cancel);
    observer.Flush();
    std::optional<ApiError> refused;
    // Held until the event is in the stream's queue (which bounds its own bytes).
    Result<ByteBudget::Reservation> held = ByteBudget::Reservation();
    // A dropped reader is owed nothing: the result is not even built.
    const bool owed = raw->channel->accepting();
    if (result.ok() && owed) held = exec::ReserveAnswer(answers, *result);
    if (result.ok() && !owed) {
      logger->debug("POST /v1/execute (stream): verdict {} for a reader already dropped",
                    exec::VerdictName(result->verdict));
    } else if (result.ok() && !held.ok()) {
      logger->warn("POST /v1/execute (stream): {}", held.error().message());
      json body = ErrorBody(AnswerRefused(held.error(), retry_after_s));
      body["status"] = 503;
      raw->Push(SseEvent("error", body));
    } else if (result.ok()) {
      logger->debug("POST /v1/execute (stream): verdict {} in {} ms",
                    exec::VerdictName(result->verdict), result->duration_ms);
      raw->Push(SseEvent("result", exec::RunResultJson(*result, exec::RunResultShape::kComplete)));
    } else {
      refused = in_session ? FromSessionError(result.error(), retry_after_s, 429)
                           : FromEngineError(result.error(), retry_after_s);
      json body = ErrorBody(*refused);
      body["status"] = refused->status;
      raw->Push(SseEvent("error", body));
    }
    raw->channel->Close();
    {
      std::lock_guard lock(raw->mu);
      raw->refusal = std::move(refused);
      raw->finished = true;
    }
    raw->cv.notify_all();
    registration.reset();  // the run is over: Shutdown() need not cancel it
  });

  {
    std::unique_lock lock(state->mu);
    state->cv.wait_for(lock, options_.sse_start_wait,
                       [&] { return state->started || state->finished; });
    if (state->finished && state->refusal) {
      ApiError refused = *state->refusal;
      lock.unlock();
      state->thread.join();
      return SendApiError(res, refused);
    }
  }
  http::ServeSse(res, state->channel, http::SseOptions{options_.sse_keepalive, options_.sse_poll},
                 state);
}

namespace {

ApiError SessionsDisabled() {
  ApiError error;
  error.status = 501;
  error.message =
      "sessions are disabled on this server (sessions.enabled is false); use POST /v1/execute "
      "without session_id";
  return error;
}

ApiError UnknownSession(const std::string& id) {
  ApiError error;
  error.status = 404;
  error.field = "session_id";
  error.message = "session " + RepairUtf8(id) +
                  " not found: it was closed, idled out or reached its lifetime, or belongs to "
                  "another token (GET /v1/sessions lists yours)";
  return error;
}

// Content-Disposition for a download: the base name, quoted, plus RFC 5987 filename* so
// non-ASCII names survive.
std::string Disposition(std::string_view path) {
  std::string_view base =
      path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  std::string ascii;
  std::string encoded;
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : base) {
    const auto u = static_cast<unsigned char>(c);
    const bool plain = u >= 0x20 && u < 0x7F && c != '"' && c != '\\';
    ascii += plain ? c : '_';
    const bool attr = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                      c == '.' || c == '-' || c == '_';
    if (attr) {
      encoded += c;
    } else {
      encoded += '%';
      encoded += kHex[u >> 4];
      encoded += kHex[u & 0x0F];
    }
  }
  if (ascii.empty()) ascii = "file";
  return "attachment; filename=\"" + ascii + "\"; filename*=UTF-8''" + encoded;
}

}  // namespace

void HttpApi::RegisterSessions(httplib::Server& server) {
  // Each route resolves the session service and the principal first; the id comes from the
  // path and is checked for syntax, so a malformed one is simply not found.
  const std::string kId = "/v1/sessions/([^/]+)";
  auto guard = [this](httplib::Response& res) {
    if (sessions_ == nullptr) {
      SendApiError(res, SessionsDisabled());
      return false;
    }
    return true;
  };
  // `id`: the session the request names ("" for none), never logged (its digest is).
  auto refuse = [this](httplib::Response& res, const Error& error, int limit_status,
                       const std::string& id) {
    ApiError refused = FromSessionError(error, options_.retry_after_s, limit_status);
    if (refused.status >= 500) {
      logger_->warn("sessions: the engine refused: {}",
                    LogQuoted(RedactSessionId(error.ToString(), id), 1024));
    }
    SendApiError(res, refused);
  };

  server.Post("/v1/sessions",
              [this, guard, refuse](const httplib::Request& req, httplib::Response& res) {
                if (!guard(res)) return;
                if (!http::IsJsonBody(req)) return SendApiError(res, UnsupportedMediaType(req));
                json body = nullptr;
                if (!req.body.empty()) {
                  ApiError error;
                  auto parsed = ParseBody(req, error);
                  if (!parsed) return SendApiError(res, error);
                  body = std::move(*parsed);
                }
                exec::SessionCreateRequest request;
                if (auto refused = ParseSessionCreateRequest(body, request)) {
                  return SendApiError(res, *refused);
                }
                auto info = sessions_->Create(Principal(req), request);
                if (!info.ok()) return refuse(res, info.error(), 429, "");
                res.set_header("Location", "/v1/sessions/" + info->id);
                SendJson(res, 201, exec::SessionInfoJson(*info));
              });

  server.Get("/v1/sessions",
             [this, guard, refuse](const httplib::Request& req, httplib::Response& res) {
               if (!guard(res)) return;
               auto list = sessions_->List(Principal(req));
               if (!list.ok()) return refuse(res, list.error(), 429, "");
               json sessions = json::array();
               for (const auto& info : *list) sessions.push_back(exec::SessionInfoJson(info));
               SendJson(res, 200, {{"sessions", sessions}});
             });

  server.Get(kId, [this, guard, refuse](const httplib::Request& req, httplib::Response& res) {
    if (!guard(res)) return;
    const std::string id = req.matches[1];
    if (!IsSessionIdSyntax(id)) return SendApiError(res, UnknownSession(id));
    auto info = sessions_->Get(Principal(req), id);
    if (!info.ok()) return refuse(res, info.error(), 429, id);
    SendJson(res, 200, exec::SessionInfoJson(*info));
  });

  server.Delete(kId, [this, guard, refuse](const httplib::Request& req, httplib::Response& res) {
    if (!guard(res)) return;
    const std::string id = req.matches[1];
    if (!IsSessionIdSyntax(id)) return SendApiError(res, UnknownSession(id));
    auto closed = sessions_->Close(Principal(req), id);
    if (!closed.ok()) return refuse(res, closed.error(), 429, id);
    res.status = 204;
  });

  server.Get(kId + "/files", [this, guard, refuse](const httplib::Request& req,
                                                   httplib::Response& res) {
    if (!guard(res)) return;
    const std::string id = req.matches[1];
    if (!IsSessionIdSyntax(id)) return SendApiError(res, UnknownSession(id));
    auto listed = sessions_->ListFiles(Principal(req), id);
    if (!listed.ok()) return refuse(res, listed.error(), 413, id);
    json files = json::array();
    for (const auto& file : listed->files) files.push_back(exec::SessionFileJson(file));
    SendJson(res, 200, {{"session_id", id}, {"files", files}, {"truncated", listed->truncated}});
  });

  const std::string file_route = kId + "/files/(.+)";
  server.Put(
      file_route, [this, guard, refuse](const httplib::Request& req, httplib::Response& res) {
        if (!guard(res)) return;
        const std::string id = req.matches[1];
        const std::string path = req.matches[2];
        if (!IsSessionIdSyntax(id)) return SendApiError(res, UnknownSession(id));
        const auto size = static_cast<std::int64_t>(req.body.size());
        if (size > options_.session_max_file_bytes) {
          ApiError error;
          error.status = 413;
          error.message = "the file is " + std::to_string(size) + " bytes, above the limit of " +
                          std::to_string(options_.session_max_file_bytes) +
                          " bytes per session file (sessions.max_file_bytes)";
          return SendApiError(res, error);
        }
        auto written = sessions_->PutFiles(Principal(req), id, {exec::InputFile{path, req.body}});
        if (!written.ok()) return refuse(res, written.error(), 413, id);
        json file = written->empty() ? json{{"path", RepairUtf8(path)}, {"size", size}}
                                     : exec::SessionFileJson(written->front());
        SendJson(res, 200, file);
      });

  server.Get(
      file_route, [this, guard, refuse](const httplib::Request& req, httplib::Response& res) {
        if (!guard(res)) return;
        const std::string id = req.matches[1];
        const std::string path = req.matches[2];
        if (!IsSessionIdSyntax(id)) return SendApiError(res, UnknownSession(id));
        auto file = sessions_->GetFile(Principal(req), id, path);
        if (!file.ok()) return refuse(res, file.error(), 413, id);
        // The bytes were written by sandboxed code: never let a browser render them as a page of
        // this origin.
        res.set_header("Content-Disposition", Disposition(file->path.empty() ? path : file->path));
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("Content-Security-Policy", "sandbox");
        res.status = 200;
        res.set_content(file->data,
                        file->mime_type.empty() ? "application/octet-stream" : file->mime_type);
      });

  server.Delete(file_route,
                [this, guard, refuse](const httplib::Request& req, httplib::Response& res) {
                  if (!guard(res)) return;
                  const std::string id = req.matches[1];
                  const std::string path = req.matches[2];
                  if (!IsSessionIdSyntax(id)) return SendApiError(res, UnknownSession(id));
                  auto deleted = sessions_->DeleteFile(Principal(req), id, path);
                  if (!deleted.ok()) return refuse(res, deleted.error(), 413, id);
                  res.status = 204;
                });
}

}  // namespace sandbox::api
