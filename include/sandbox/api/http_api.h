// HttpApi: the plain HTTP API next to MCP on the server's one httplib::Server.
//
//   POST /eval          Snekbox-compatible evaluation (snekbox.h): always 200 once a run
//                       happened; 400 bad input, 415 body not JSON, 503 (+Retry-After) busy.
//   POST /v1/execute    one run, answered as one JSON result, or as Server-Sent Events when the
//                       request's Accept lists text/event-stream (shapes: src/api/execute.h).
//   GET  /openapi.json  the OpenAPI 3.1 description of these routes and /healthz.
//   GET /eval, GET /v1/execute: 405 with Allow: POST.
//
// Sessions (with a SessionService; otherwise each answers 501 and /v1/execute refuses
// session_id with 400):
//   POST   /v1/sessions                     create {pool?, timeout_s?, memory_bytes?,
//                                           output_bytes?}: 201 + the session, Location header
//   GET    /v1/sessions                     the caller's sessions: {sessions: [...]}
//   GET    /v1/sessions/{id}                one session
//   DELETE /v1/sessions/{id}                close it: 204
//   GET    /v1/sessions/{id}/files          {session_id, files: [...], truncated}
//   PUT    /v1/sessions/{id}/files/{path}   raw body = the file's bytes: 200 + the file;
//                                           above sessions.max_file_bytes 413
//   GET    /v1/sessions/{id}/files/{path}   the raw bytes, Content-Type the file's type (sent
//                                           as an attachment, nosniff, CSP sandbox)
//   DELETE /v1/sessions/{id}/files/{path}   204
// {path} is the URL path after /files/ (percent-decoded by the server). Every route acts for the
// request's principal (ApiOptions::principal): another principal's session is 404, as an
// unknown one. Errors: 400 bad input, 404 unknown session or file, 413 too large, 429 session
// limit reached, 503 + Retry-After busy (the session is running another call, or no container
// was free), 501 sessions disabled. POST /v1/execute with session_id runs in the session.
//
// Authentication, Host/Origin checks and the body-size limit are the server's (its pre-routing
// handler and payload limit apply to these routes as to /mcp); this class adds none.
//
// Request bodies: Content-Type must be JSON (application/json, any +json type, or absent);
// otherwise 415. Errors of /v1/execute are {"error", "field"}; those of /eval carry Snekbox's
// {"title", "description"} as well.
//
// The SSE stream of /v1/execute: headers "Content-Type: text/event-stream", "Cache-Control:
// no-cache", "X-Accel-Buffering: no"; events `stdout` and `stderr` ({"text": ...}, UTF-8 with
// characters split across chunks kept whole), `image`, `file`, then exactly one of `result` (the
// full result) or `error` ({"error", "field", "status"}: the engine refused after the stream had
// begun); a ": keepalive" comment after `sse_keepalive` of silence; no event ids. The handler
// waits up to `sse_start_wait` for the run to start, so a refusal before that (bad pool, limits,
// busy) is a plain HTTP error with a JSON body instead of a stream. The run executes on a thread
// of its own while the httplib worker writes the stream with http::ServeSse (the writer of the
// MCP streams too), waking at least every `sse_poll`.
// A vanished client (a failed write, or sink.is_writable() false at a wake-up) cancels the run
// through its CancelToken: the engine ends it within a second and the stream's thread is joined
// when httplib releases the response. In JSON mode and for /eval a dropped connection is not
// noticed: the run finishes within its limits and the answer is discarded.
//
// Thread-safety: Register() once before the server listens; handlers run on many workers at once.
// Shutdown() may be called from any thread: later requests get 503, running runs are cancelled
// (streams end with a `result` whose verdict is cancelled). The object must outlive the server's
// workers (destroy it after listen() has returned).
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/api/snekbox.h"
#include "sandbox/core/slot_limiter.h"
#include "sandbox/exec/answer_bound.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/http/httplib_fwd.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/sse_channel.h"

namespace sandbox::http {
class RunRegistry;
}  // namespace sandbox::http

namespace sandbox::api {

struct ApiOptions {
  std::string version = "0.0.0";         // shown in /openapi.json
  std::size_t max_code_bytes = 1 << 20;  // /v1/execute `code`; longer: 413
  int retry_after_s = 2;                 // Retry-After of a 503 when every sandbox is busy
  std::chrono::milliseconds sse_keepalive{15000};
  std::chrono::milliseconds sse_poll{1000};
  std::chrono::milliseconds sse_start_wait{10000};
  // The bound of a stream's queue (memory.stream_queue_bytes) and the budget it counts against:
  // a reader that falls behind gets a last `error` event (status 503) and the run is cancelled.
  http::SseChannelLimits sse_queue;
  // The principal of a request from its Authorization header (http::RequestGuard::Resolver());
  // unset: every request is http::kLocalPrincipal.
  http::PrincipalResolver principal;
  std::int64_t session_max_file_bytes = 16LL << 20;  // PUT .../files/{path} above it: 413
  // Each run in progress (/eval, /v1/execute in both modes, waiting for a sandbox included)
  // holds an HTTP worker, so it holds a slot too, shared with the MCP streams; none free: 503
  // with Retry-After. Null: no bound.
  std::shared_ptr<SlotLimiter> stream_slots;
  // Each run's answer (JSON, the SSE `result` event, /eval's JSON) is reserved in this budget
  // (memory.inflight_bytes) before it is built; one that does not fit in time is refused with
  // 503 and a message naming memory.inflight_bytes. No budget: answers are not counted.
  exec::AnswerBudget answers;
  // /eval's answer carries `engine` (where the code ran) only on a server of several engines: on
  // one it stays byte for byte Snekbox's.
  bool eval_names_engine = false;
};

class HttpApi {
 public:
  HttpApi(exec::ExecutionService& service, ApiOptions options,
          std::shared_ptr<spdlog::logger> logger);
  // `sessions` may be null (sessions disabled).
  HttpApi(exec::ExecutionService& service, exec::SessionService* sessions, ApiOptions options,
          std::shared_ptr<spdlog::logger> logger);
  ~HttpApi();
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Adds the routes above to `server`.
  void Register(httplib::Server& server);

  // Refuses new requests (503) and cancels every running run. Idempotent.
  void Shutdown();

  // Runs in progress (for tests and diagnostics).
  std::size_t active_runs() const;

 private:
  // Runs one request (one-shot or in a session) with an observer and a cancel token.
  using RunFunction =
      std::function<Result<exec::RunResult>(exec::RunObserver&, const exec::CancelToken&)>;
  void ServeStream(RunFunction run, bool in_session, httplib::Response& res,
                   std::shared_ptr<SlotLimiter::Slot> slot);
  void RegisterSessions(httplib::Server& server);
  std::string Principal(const httplib::Request& req) const;
  // A slot of options_.stream_slots; nullptr when none is free or there is no limit.
  std::shared_ptr<SlotLimiter::Slot> TakeSlot(const std::string& principal,
                                              SlotLimiter::Refusal& why) const;

  exec::ExecutionService& service_;
  exec::SessionService* const sessions_;
  const ApiOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<http::RunRegistry> registry_;  // shared with the streams' threads
};

}  // namespace sandbox::api
