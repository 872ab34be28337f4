// The plain HTTP API's routes (api/): POST /eval (Snekbox), POST /v1/execute (JSON and SSE
// answers) and the /v1/sessions routes, through httplib's request parsing and routing in memory
// (http_harness.h) behind the server's guard, over the API's fake engine (which prints the
// code it was given, so program output is fuzzed too) and the fake session service. Each input
// is a sequence of requests: method, one of the API's paths (with the id of a session created
// earlier, or fuzzed bytes), Content-Type and Accept good or fuzzed, and a fuzzed body. The
// route parsers (ParseExecuteRequest, ParseEvalRequest, ParseSessionCreateRequest,
// NormalizeSnekboxPath) are reached through the routes; the Snekbox path rules are also
// checked directly on the body bytes.
// Properties (besides: no crash, no exception escaping a handler):
//   - every answer is well-formed HTTP; no 500;
//   - every refusal of an API route carries a JSON body whose "error" says what was wrong
//     (and /eval's also Snekbox's "title" and "description");
//   - /v1/execute's JSON answer has a verdict; its SSE answer is a sequence of known events
//     ending with exactly one `result` or `error`; /eval's answer has stdout and returncode;
//   - POST /v1/sessions answers 201 with the session and its Location;
//   - NormalizeSnekboxPath returns a relative path without "." or ".." segments or NUL, and is
//     idempotent.
#include <fuzzer/FuzzedDataProvider.h>
#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "fuzz/http_harness.h"
#include "sandbox/api/http_api.h"
#include "sandbox/api/snekbox.h"
#include "sandbox/core/json.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/server_setup.h"
#include "support/fake_service.h"
#include "support/fake_session_service.h"
#include "unit/mcp/test_util.h"

namespace {

using nlohmann::json;
using sandbox::fuzz::BuildRequest;
using sandbox::fuzz::HeaderLine;
using sandbox::fuzz::HttpAnswer;
using sandbox::fuzz::InMemoryServer;
namespace api = sandbox::api;
namespace http = sandbox::http;

void CheckPathRules(std::string_view path) {
  auto normalized = api::NormalizeSnekboxPath(path);
  if (!normalized.ok()) {
    FUZZ_CHECK(!normalized.error().message().empty(), "a refusal says why");
    return;
  }
  const std::string& p = *normalized;
  FUZZ_CHECK(!p.starts_with('/'), "relative");
  FUZZ_CHECK(p.find('\0') == std::string::npos, "no NUL");
  std::string_view rest = p;
  while (!rest.empty()) {
    const auto slash = std::min(rest.find('/'), rest.size());
    const std::string_view segment = rest.substr(0, slash);
    FUZZ_CHECK(segment != ".." && segment != ".", "no dot segments");
    rest.remove_prefix(std::min(rest.size(), slash + 1));
  }
  auto again = api::NormalizeSnekboxPath(p);
  FUZZ_CHECK(again.ok() && *again == p, "idempotent");
}

class Client {
 public:
  Client() {
    service_.SetBehaviour(
        [](const sandbox::exec::RunRequest& request, sandbox::exec::RunObserver& observer,
           const sandbox::exec::CancelToken&) -> sandbox::Result<sandbox::exec::RunResult> {
          observer.OnStarted();
          observer.OnOutput(sandbox::exec::Stream::kStdout, request.code);
          observer.OnOutput(sandbox::exec::Stream::kStderr, "err");
          return sandbox::testing::FakeService::Ok(request.code, "err");
        });
    http::ConfigureHttpServer(server_, http::HttpServerOptions{}, guard_);
    api::ApiOptions options;
    options.sse_poll = std::chrono::milliseconds(5);
    options.sse_start_wait = std::chrono::milliseconds(2000);
    options.max_code_bytes = 512;
    api_ = std::make_unique<api::HttpApi>(service_, &sessions_, options,
                                          sandbox::mcp::testing::NullLogger());
    api_->Register(server_);
  }
  ~Client() { api_->Shutdown(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void Step(FuzzedDataProvider& fdp) {
    static constexpr const char* kMethods[] = {"POST", "POST", "GET", "PUT", "DELETE", "HEAD"};
    const std::string method = fdp.PickValueInArray(kMethods);
    const std::string id =
        fdp.ConsumeBool() && !session_id_.empty() ? session_id_ : fdp.ConsumeRandomLengthString(40);
    std::string target;
    const int route = fdp.ConsumeIntegralInRange(0, 7);
    switch (route) {
      case 0:
        target = "/eval";
        break;
      case 1:
        target = "/v1/execute";
        break;
      case 2:
        target = "/v1/sessions";
        break;
      case 3:
        target = "/v1/sessions/" + id;
        break;
      case 4:
        target = "/v1/sessions/" + id + "/files";
        break;
      case 5:
        target = "/v1/sessions/" + id + "/files/" + fdp.ConsumeRandomLengthString(40);
        break;
      case 6:
        target = "/openapi.json";
        break;
      default:
        target = fdp.ConsumeRandomLengthString(60);
        break;
    }
    const auto flags = fdp.ConsumeIntegral<std::uint8_t>();
    std::string headers = HeaderLine("Host", "localhost:8080");
    if ((flags & 1) == 0) {
      headers += HeaderLine("Content-Type", (flags & 2) == 0 ? "application/json"
                                                             : fdp.ConsumeRandomLengthString(30));
    }
    const bool stream = (flags & 4) != 0;
    if (stream) headers += HeaderLine("Accept", "text/event-stream");
    if ((flags & 8) != 0) headers += HeaderLine("Accept", fdp.ConsumeRandomLengthString(30));
    std::string body = fdp.ConsumeRandomLengthString(1024);
    if ((flags & 16) != 0 && !session_id_.empty()) {
      // Let the fuzzer's bodies name the live session.
      for (auto at = body.find("@id"); at != std::string::npos; at = body.find("@id")) {
        body.replace(at, 3, session_id_);
      }
    }
    CheckPathRules(body);

    auto answer =
        sandbox::fuzz::ParseHttpAnswer(server_.Serve(BuildRequest(method, target, headers, body)));
    FUZZ_CHECK(answer.has_value(), "well-formed HTTP");
    FUZZ_CHECK(answer->status != 500, "no 500");
    FUZZ_CHECK(answer->complete || method == "HEAD", "a whole body");
    const bool routed = route <= 5 && method != "HEAD";
    if (answer->status >= 400 && method != "HEAD") {
      FUZZ_CHECK(answer->Header("content-type") == "application/json", "a refusal is JSON");
      auto parsed = sandbox::ParseJson(answer->body);
      FUZZ_CHECK(parsed.ok() && parsed->is_object(), "a JSON object");
      auto error = parsed->find("error");
      FUZZ_CHECK(error != parsed->end(), "the refusal has an error member");
      // The API's own refusals: {"error": "why", "field": ...}. Those written before a route
      // runs (httplib's parse errors, unknown routes, the guard) are JSON-RPC errors:
      // {"error": {"code": ..., "message": "why"}}.
      const bool api_shape = error->is_string();
      const auto* why = api_shape ? &*error : nullptr;
      if (!api_shape) {
        FUZZ_CHECK(error->is_object() && error->contains("message"), "a JSON-RPC error");
        why = &(*error)["message"];
      }
      FUZZ_CHECK(why->is_string() && !why->get<std::string>().empty(), "the refusal says why");
      if (routed && api_shape && route == 0 && method == "POST") {
        FUZZ_CHECK(parsed->contains("title") && parsed->contains("description"), "Snekbox's shape");
      }
    }
    if (method != "POST" || answer->status >= 300) return;
    if (route == 0) {
      auto parsed = sandbox::ParseJson(answer->body);
      FUZZ_CHECK(parsed.ok() && parsed->contains("stdout") && parsed->contains("returncode"),
                 "/eval's answer");
    } else if (route == 1) {
      if (answer->Header("content-type") == "text/event-stream") {
        CheckExecuteStream(answer->body);
      } else {
        auto parsed = sandbox::ParseJson(answer->body);
        FUZZ_CHECK(parsed.ok() && parsed->contains("verdict"), "/v1/execute's answer");
      }
    } else if (route == 2) {
      FUZZ_CHECK(answer->status == 201, "created");
      auto parsed = sandbox::ParseJson(answer->body);
      FUZZ_CHECK(
          parsed.ok() && parsed->contains("session_id") && (*parsed)["session_id"].is_string(),
          "the session");
      session_id_ = (*parsed)["session_id"].get<std::string>();
      FUZZ_CHECK(answer->Header("location").ends_with(session_id_), "its Location");
    }
  }

 private:
  static void CheckExecuteStream(const std::string& body) {
    auto events = sandbox::fuzz::ParseSse(body);
    FUZZ_CHECK(events.has_value(), "a well-formed event stream");
    int finals = 0;
    for (std::size_t i = 0; i < events->size(); ++i) {
      const auto& e = (*events)[i];
      if (e.event.empty()) continue;  // keepalive
      FUZZ_CHECK(e.event == "stdout" || e.event == "stderr" || e.event == "image" ||
                     e.event == "file" || e.event == "result" || e.event == "error",
                 "known events");
      FUZZ_CHECK(sandbox::ParseJson(e.data).ok(), "JSON data");
      if (e.event == "result" || e.event == "error") {
        ++finals;
        FUZZ_CHECK(i + 1 == events->size(), "the final event is last");
      }
    }
    FUZZ_CHECK(finals == 1, "exactly one result or error");
  }

  sandbox::testing::FakeService service_;
  sandbox::testing::FakeSessionService sessions_;
  http::RequestGuard guard_{http::GuardOptions{}};
  InMemoryServer server_;
  std::unique_ptr<api::HttpApi> api_;
  std::string session_id_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  Client client;
  const int steps = fdp.ConsumeIntegralInRange(1, 6);
  for (int i = 0; i < steps && fdp.remaining_bytes() > 0; ++i) client.Step(fdp);
  return 0;
}
