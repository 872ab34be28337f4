#include "sandbox/api/http_api.h"

#include <httplib.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "sandbox/core/utf8.h"
#include "sandbox/api/execute.h"
#include "sandbox/api/openapi.h"

namespace sandbox::api {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class HttpApi::Registry {
 public:
  // A fresh token registered as running, or nullptr once shutting down.
  std::shared_ptr<exec::CancelToken> Add() {
    std::lock_guard lock(mu_);
    if (shutting_down_) return nullptr;
    auto token = std::make_shared<exec::CancelToken>();
    active_.insert(token);
    return token;
  }
  void Remove(const std::shared_ptr<exec::CancelToken>& token) {
    std::lock_guard lock(mu_);
    active_.erase(token);
  }
  void Shutdown() {
    std::set<std::shared_ptr<exec::CancelToken>> tokens;
    {
      std::lock_guard lock(mu_);
      shutting_down_ = true;
      tokens = active_;
    }
    for (const auto& token : tokens) token->Cancel();
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return active_.size();
  }

 private:
  mutable std::mutex mu_;
  bool shutting_down_ = false;
  std::set<std::shared_ptr<exec::CancelToken>> active_;
};

namespace {

// Keeps a run's token registered for its lifetime.
class Registration {
 public:
  explicit Registration(std::shared_ptr<HttpApi::Registry> registry)
      : registry_(std::move(registry)), token_(registry_->Add()) {}
  ~Registration() {
    if (token_) registry_->Remove(token_);
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  bool ok() const { return token_ != nullptr; }
  exec::CancelToken& token() const { return *token_; }
  const std::shared_ptr<exec::CancelToken>& shared_token() const { return token_; }

 private:
  std::shared_ptr<HttpApi::Registry> registry_;
  std::shared_ptr<exec::CancelToken> token_;
};

class NullObserver final : public exec::RunObserver {};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string MediaType(std::string_view value) {
  return Lower(Trim(value.substr(0, value.find(';'))));
}

// JSON, any +json type, or no Content-Type at all (as Snekbox's Falcon app assumes JSON).
bool IsJsonBody(const httplib::Request& req) {
  if (!req.has_header("Content-Type")) return true;
  const std::string type = MediaType(req.get_header_value("Content-Type"));
  return type == "application/json" || (type.rfind("application/", 0) == 0 && type.size() > 5 &&
                                        type.compare(type.size() - 5, 5, "+json") == 0);
}

// Whether Accept lists text/event-stream (with a q above 0).
bool WantsEventStream(std::string_view accept) {
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    const auto semi = range.find(';');
    if (MediaType(range.substr(0, semi)) == "text/event-stream") {
      bool refused = false;
      if (semi != std::string_view::npos) {
        const std::string params = Lower(range.substr(semi));
        const auto q = params.find("q=");
        if (q != std::string::npos) {
          const std::string_view rest = params;
          const std::string value(Trim(rest.substr(q + 2)));
          refused =
              value.rfind('0', 0) == 0 && value.find_first_of("123456789") == std::string::npos;
        }
      }
      if (!refused) return true;
    }
    if (comma == std::string_view::npos) break;
    accept.remove_prefix(comma + 1);
  }
  return false;
}

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void SendApiError(httplib::Response& res, const ApiError& error) {
  if (error.retry_after_s > 0) res.set_header("Retry-After", std::to_string(error.retry_after_s));
  SendJson(res, error.status, ErrorBody(error));
}

void SendSnekboxError(httplib::Response& res, std::string_view title, const ApiError& error) {
  if (error.retry_after_s > 0) res.set_header("Retry-After", std::to_string(error.retry_after_s));
  SendJson(res, error.status, SnekboxErrorBody(title, error));
}

ApiError ShuttingDown() {
  ApiError error;
  error.status = 503;
  error.message = "the server is shutting down";
  return error;
}

ApiError TooManyStreams(std::size_t limit) {
  ApiError error;
  error.status = 503;
  error.message = std::to_string(limit) +
                  " streams and runs are in progress, the most this server serves at once "
                  "(server.max_streams); retry later";
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
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) {
    error.status = 400;
    error.message = req.body.empty() ? "the body is empty; expected a JSON object"
                                     : "the body is not valid JSON";
    return std::nullopt;
  }
  return body;
}

void MethodNotAllowed(const httplib::Request&, httplib::Response& res) {
  res.set_header("Allow", "POST");
  ApiError error;
  error.status = 405;
  error.message = "use POST";
  SendJson(res, 405, ErrorBody(error));
}

// Shared between the handler, the run's thread and the httplib worker writing the stream.
struct StreamState {
  std::mutex mu;
  std::condition_variable cv;
  std::string queued;  // formatted events not yet written
  bool started = false;
  bool finished = false;  // the last event (result or error) is queued
  std::optional<ApiError> refusal;
  std::shared_ptr<exec::CancelToken> cancel;
  std::thread thread;  // runs the run; captures a raw pointer to this state, never owns it

  ~StreamState() {
    if (thread.joinable()) {
      cancel->Cancel();
      thread.join();
    }
  }

  void Push(const std::string& event) {
    {
      std::lock_guard lock(mu);
      queued += event;
    }
    cv.notify_all();
  }
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
    state_.Push(SseEvent("image", ImageJson(image)));
  }
  void OnFile(const exec::OutputFile& file) override {
    state_.Push(SseEvent("file", FileJson(file)));
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
    : service_(service),
      options_(std::move(options)),
      logger_(std::move(logger)),
      registry_(std::make_shared<Registry>()) {}

HttpApi::~HttpApi() { Shutdown(); }

void HttpApi::Shutdown() { registry_->Shutdown(); }

std::size_t HttpApi::active_runs() const { return registry_->size(); }

void HttpApi::Register(httplib::Server& server) {
  server.Get("/openapi.json", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, OpenApiDocument(options_));
  });
  server.Get("/eval", MethodNotAllowed);
  server.Get("/v1/execute", MethodNotAllowed);

  server.Post("/eval", [this](const httplib::Request& req, httplib::Response& res) {
    if (!IsJsonBody(req)) {
      ApiError error = UnsupportedMediaType(req);
      return SendSnekboxError(res, "415 Unsupported Media Type", error);
    }
    ApiError error;
    auto body = ParseBody(req, error);
    if (!body) return SendSnekboxError(res, "Invalid JSON", error);
    EvalPlan plan;
    if (auto refused = ParseEvalRequest(*body, options_.python_executables, plan)) {
      return SendSnekboxError(res, refused->title, *refused);
    }
    if (plan.immediate_failure) return SendJson(res, 200, EvalFailure(*plan.immediate_failure));
    auto slot = TakeSlot();
    if (options_.stream_slots && !slot) {
      return SendSnekboxError(res, "503 Service Unavailable",
                              TooManyStreams(options_.stream_slots->capacity()));
    }
    Registration run(registry_);
    if (!run.ok()) return SendSnekboxError(res, "503 Service Unavailable", ShuttingDown());
    OutputMerger merger;
    auto result = service_.Run(plan.request, merger, run.token());
    if (!result.ok()) {
      ApiError refused = FromEngineError(result.error(), options_.retry_after_s);
      if (refused.status == 400)
        return SendSnekboxError(res, "Request data failed validation", refused);
      if (refused.status == 503 && refused.retry_after_s > 0) {
        return SendSnekboxError(res, "503 Service Unavailable", refused);
      }
      // Snekbox's answer when the sandbox itself fails: returncode null, the reason in stdout.
      logger_->warn("POST /eval: the engine refused: {}", result.error().ToString());
      return SendJson(res, 200, EvalFailure(refused.message));
    }
    logger_->debug("POST /eval: verdict {} in {} ms", exec::VerdictName(result->verdict),
                   result->duration_ms);
    SendJson(res, 200, EvalResponse(*result, merger.Merged(*result)));
  });

  server.Post("/v1/execute", [this](const httplib::Request& req, httplib::Response& res) {
    if (!IsJsonBody(req)) return SendApiError(res, UnsupportedMediaType(req));
    ApiError error;
    auto body = ParseBody(req, error);
    if (!body) return SendApiError(res, error);
    exec::RunRequest request;
    if (auto refused = ParseExecuteRequest(*body, options_.max_code_bytes, request)) {
      return SendApiError(res, *refused);
    }
    auto slot = TakeSlot();
    if (options_.stream_slots && !slot) {
      return SendApiError(res, TooManyStreams(options_.stream_slots->capacity()));
    }
    if (WantsEventStream(req.get_header_value("Accept"))) {
      return ServeStream(std::move(request), res, std::move(slot));
    }
    Registration run(registry_);
    if (!run.ok()) return SendApiError(res, ShuttingDown());
    NullObserver observer;
    auto result = service_.Run(request, observer, run.token());
    if (!result.ok()) {
      ApiError refused = FromEngineError(result.error(), options_.retry_after_s);
      if (refused.status >= 500) {
        logger_->warn("POST /v1/execute: the engine refused: {}", result.error().ToString());
      }
      return SendApiError(res, refused);
    }
    logger_->debug("POST /v1/execute: verdict {} in {} ms", exec::VerdictName(result->verdict),
                   result->duration_ms);
    SendJson(res, 200, ExecuteResultJson(*result));
  });
}

std::shared_ptr<SlotLimiter::Slot> HttpApi::TakeSlot() const {
  return options_.stream_slots ? options_.stream_slots->TryAcquire() : nullptr;
}

void HttpApi::ServeStream(exec::RunRequest request, httplib::Response& res,
                          std::shared_ptr<SlotLimiter::Slot> slot) {
  auto registration = std::make_shared<Registration>(registry_);
  if (!registration->ok()) return SendApiError(res, ShuttingDown());
  auto state = std::make_shared<StreamState>();
  state->cancel = registration->shared_token();
  StreamState* raw = state.get();
  const int retry_after_s = options_.retry_after_s;
  exec::ExecutionService& service = service_;
  auto logger = logger_;
  state->thread = std::thread(
      [&service, logger, raw, registration, retry_after_s, request = std::move(request)]() mutable {
        StreamObserver observer(*raw);
        auto result = service.Run(request, observer, *raw->cancel);
        observer.Flush();
        std::string last;
        if (result.ok()) {
          logger->debug("POST /v1/execute (stream): verdict {} in {} ms",
                        exec::VerdictName(result->verdict), result->duration_ms);
          last = SseEvent("result", ExecuteResultJson(*result));
        } else {
          ApiError refused = FromEngineError(result.error(), retry_after_s);
          json body = ErrorBody(refused);
          body["status"] = refused.status;
          last = SseEvent("error", body);
          std::lock_guard lock(raw->mu);
          raw->refusal = std::move(refused);
        }
        {
          std::lock_guard lock(raw->mu);
          raw->queued += last;
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

  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto last_write = std::make_shared<Clock::time_point>(Clock::now());
  const auto poll = options_.sse_poll;
  const auto keepalive = options_.sse_keepalive;
  // Exactly "text/event-stream": with a charset parameter httplib would compress the stream.
  res.set_chunked_content_provider(
      "text/event-stream",
      [state, last_write, poll, keepalive, logger, slot = std::move(slot)](
          std::size_t, httplib::DataSink& sink) {
        std::string out;
        bool done = false;
        {
          std::unique_lock lock(state->mu);
          state->cv.wait_for(lock, poll, [&] { return !state->queued.empty() || state->finished; });
          out.swap(state->queued);
          done = state->finished;
        }
        if (!out.empty()) {
          if (!sink.write(out.data(), out.size())) {
            logger->info("POST /v1/execute: the client went away; cancelling the run");
            state->cancel->Cancel();
            return false;
          }
          *last_write = Clock::now();
        }
        if (done) {
          sink.done();
          return true;
        }
        if (!sink.is_writable()) {
          logger->info("POST /v1/execute: the client went away; cancelling the run");
          state->cancel->Cancel();
          return false;
        }
        if (Clock::now() - *last_write >= keepalive) {
          if (!sink.write(kSseKeepalive.data(), kSseKeepalive.size())) {
            state->cancel->Cancel();
            return false;
          }
          *last_write = Clock::now();
        }
        return true;
      },
      [state](bool success) {
        if (!success) state->cancel->Cancel();
        if (state->thread.joinable()) state->thread.join();
      });
}

}  // namespace sandbox::api
