// The HTTP API on a real httplib::Server (127.0.0.1, any port) in front of a fake engine: status
// codes, Snekbox's documented examples replayed, return codes per verdict, the SSE stream's
// framing and timing, keep-alives, a vanished client cancelling its run, shutdown.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/api/http_api.h"
#include "sandbox/core/base64.h"
#include "support/fake_service.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;
using sandbox::testing::FakeService;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct SseEvent {
  std::string name;    // "" for a comment
  std::string data;    // the comment's text for a comment
  Clock::duration at;  // arrival since the request was sent
};

// Splits an event stream into events and comments.
std::vector<SseEvent> ParseSse(const std::vector<std::pair<std::string, Clock::duration>>& chunks) {
  std::vector<SseEvent> events;
  std::string buffer;
  for (const auto& [chunk, at] : chunks) {
    buffer += chunk;
    std::size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      std::string block = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      SseEvent event;
      event.at = at;
      std::size_t start = 0;
      while (start <= block.size()) {
        auto nl = block.find('\n', start);
        if (nl == std::string::npos) nl = block.size();
        std::string line = block.substr(start, nl - start);
        if (line.rfind(':', 0) == 0) {
          event.data = line;
        } else if (line.rfind("event: ", 0) == 0) {
          event.name = line.substr(7);
        } else if (line.rfind("data: ", 0) == 0) {
          event.data += line.substr(6);
        } else {
          ADD_FAILURE() << "unexpected SSE line: " << line;
        }
        start = nl + 1;
      }
      events.push_back(event);
    }
  }
  EXPECT_EQ(buffer, "") << "the stream ended inside an event";
  return events;
}

class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.version = "test";
    options_.sse_keepalive = 15000ms;
    options_.sse_poll = 50ms;
    options_.sse_start_wait = 2000ms;
  }
  void Start() {
    auto logger = std::make_shared<spdlog::logger>("api-test",
                                                   std::make_shared<spdlog::sinks::null_sink_mt>());
    api_ = std::make_unique<HttpApi>(fake_, options_, logger);
    api_->Register(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 200 && !server_.is_running(); ++i) std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(server_.is_running());
  }
  void TearDown() override {
    if (api_) api_->Shutdown();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Client Client() {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(20, 0);
    return client;
  }

  httplib::Result PostJson(const std::string& path, const json& body,
                           const httplib::Headers& headers = {}) {
    auto client = Client();
    return client.Post(path.c_str(), headers, body.dump(), "application/json");
  }

  struct Stream {
    int status = 0;
    httplib::Headers headers;
    std::vector<SseEvent> events;
    std::string error_body;
  };
  // POSTs /v1/execute asking for SSE; `stop_after` > 0 closes the connection after that many
  // chunks.
  Stream PostStream(const json& body, int stop_after = 0) {
    auto client = Client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/execute";
    req.headers = {{"Accept", "text/event-stream"}, {"Content-Type", "application/json"}};
    req.body = body.dump();
    std::vector<std::pair<std::string, Clock::duration>> chunks;
    const auto start = Clock::now();
    Stream out;
    req.response_handler = [&](const httplib::Response& r) {
      out.status = r.status;
      out.headers = r.headers;
      return true;
    };
    req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
      chunks.emplace_back(std::string(data, size), Clock::now() - start);
      return stop_after == 0 || static_cast<int>(chunks.size()) < stop_after;
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    client.send(req, res, error);
    if (out.status != 200) {
      for (const auto& [chunk, at] : chunks) out.error_body += chunk;
    } else if (stop_after == 0) {
      out.events = ParseSse(chunks);
    }
    return out;
  }

  ApiOptions options_;
  FakeService fake_;
  httplib::Server server_;
  std::unique_ptr<HttpApi> api_;
  int port_ = 0;
  std::thread thread_;
};

// Emits `out` on stdout and returns ok with it.
FakeService::Behaviour Prints(std::string out) {
  return [out](const exec::RunRequest&, exec::RunObserver& observer, const exec::CancelToken&) {
    observer.OnStarted();
    observer.OnOutput(exec::Stream::kStdout, out);
    return Result<exec::RunResult>(FakeService::Ok(out));
  };
}

// ---- /eval ----

TEST_F(ApiServerTest, SnekboxDocumentedRequestsGetTheDocumentedAnswer) {
  // The three request bodies of Snekbox's EvalResource docstring.
  fake_.SetBehaviour(
      [](const exec::RunRequest& request, exec::RunObserver& observer, const exec::CancelToken&) {
        observer.OnStarted();
        // The launcher runs main.py; the others run the code itself.
        const bool ok = request.code == "print('Hello')" ||
                        (request.code.find("[\"main.py\"]") != std::string::npos &&
                         request.files.size() == 1 && request.files[0].content == "print('Hello')");
        std::string out = ok ? "Hello\n" : "unexpected request: " + request.code;
        observer.OnOutput(exec::Stream::kStdout, out);
        return Result<exec::RunResult>(FakeService::Ok(out));
      });
  Start();
  const json main_py = {{"path", "main.py"}, {"content", Base64Encode("print('Hello')")}};
  for (const json& body :
       {json{{"input", "print('Hello')"}}, json{{"args", {"-c", "print('Hello')"}}},
        json{{"args", {"main.py"}}, {"files", {main_py}}}}) {
    auto res = PostJson("/eval", body);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    EXPECT_EQ(json::parse(res->body),
              json::parse(R"({"stdout": "Hello\n", "returncode": 0, "files": []})"))
        << body.dump();
  }
}

TEST_F(ApiServerTest, SnekboxDocumentedResponseShapeWithFiles) {
  // The docstring's response: timeit's line, returncode 0 and output.png as base64.
  const std::string png(57344, 'x');
  fake_.SetBehaviour(
      [&](const exec::RunRequest& request, exec::RunObserver& observer, const exec::CancelToken&) {
        EXPECT_NE(request.code.find(R"(["-m","timeit","pass"])"), std::string::npos);
        observer.OnOutput(exec::Stream::kStdout, "10000 loops, best of 5: 23.8 usec per loop");
        auto r = FakeService::Ok("10000 loops, best of 5: 23.8 usec per loop");
        r.files.push_back(exec::OutputFile{"output.png", 57344, "image/png", png});
        r.images.push_back(exec::Image{});  // figures are not part of Snekbox's answer
        return Result<exec::RunResult>(r);
      });
  Start();
  auto res = PostJson("/eval", {{"input", "pass"}, {"args", {"-m", "timeit"}}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  auto body = json::parse(res->body);
  EXPECT_EQ(body["stdout"], "10000 loops, best of 5: 23.8 usec per loop");
  EXPECT_EQ(body["returncode"], 0);
  ASSERT_EQ(body["files"].size(), 1u);
  EXPECT_EQ(body["files"][0]["path"], "output.png");
  EXPECT_EQ(body["files"][0]["size"], 57344);
  EXPECT_EQ(*Base64Decode(body["files"][0]["content"].get<std::string>()), png);
  EXPECT_EQ(body.size(), 3u);
}

TEST_F(ApiServerTest, EvalMergesStdoutAndStderrInArrivalOrder) {
  fake_.SetBehaviour(
      [](const exec::RunRequest&, exec::RunObserver& observer, const exec::CancelToken&) {
        observer.OnStarted();
        observer.OnOutput(exec::Stream::kStdout, "before\n");
        observer.OnOutput(exec::Stream::kStderr, "Traceback ...\nZeroDivisionError\n");
        observer.OnOutput(exec::Stream::kStdout, "after \xff\n");
        auto r = FakeService::Ok("before\nafter \xff\n", "Traceback ...\nZeroDivisionError\n");
        r.verdict = exec::Verdict::kError;
        r.exit_code = 1;
        return Result<exec::RunResult>(r);
      });
  Start();
  auto res = PostJson("/eval", {{"input", "1/0"}});
  ASSERT_TRUE(res);
  auto body = json::parse(res->body);
  EXPECT_EQ(body["stdout"], "before\nTraceback ...\nZeroDivisionError\nafter \xEF\xBF\xBD\n");
  EXPECT_EQ(body["returncode"], 1);
}

TEST_F(ApiServerTest, EvalReturnCodesPerVerdict) {
  struct Case {
    exec::Verdict verdict;
    int exit_code;
    std::optional<int> signal;
    json returncode;
  };
  const std::vector<Case> cases = {
      {exec::Verdict::kOk, 0, std::nullopt, 0},
      {exec::Verdict::kError, 3, std::nullopt, 3},
      {exec::Verdict::kTimeout, -1, 9, 137},
      {exec::Verdict::kMemory, -1, 9, 137},
      {exec::Verdict::kOutputLimit, -1, 9, 143},
      {exec::Verdict::kSignal, -1, 11, 139},
      {exec::Verdict::kInternal, -1, std::nullopt, nullptr},
  };
  std::size_t index = 0;
  fake_.SetBehaviour([&](const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&) {
    exec::RunResult r = FakeService::Ok("out");
    r.verdict = cases[index].verdict;
    r.exit_code = cases[index].exit_code;
    r.signal = cases[index].signal;
    r.detail = "reason " + std::to_string(index);
    return Result<exec::RunResult>(r);
  });
  Start();
  for (index = 0; index < cases.size(); ++index) {
    auto res = PostJson("/eval", {{"input", "x"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    auto body = json::parse(res->body);
    EXPECT_EQ(body["returncode"], cases[index].returncode)
        << exec::VerdictName(cases[index].verdict);
    EXPECT_EQ(body["stdout"], body["returncode"].is_null() ? "reason " + std::to_string(index)
                                                           : std::string("out"));
  }
}

TEST_F(ApiServerTest, EvalBadInputIs400WithSnekboxAndApiFields) {
  Start();
  auto res = PostJson("/eval", {{"stuff", "foo"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  auto body = json::parse(res->body);
  EXPECT_EQ(body["title"], "Request data failed validation");
  EXPECT_EQ(body["description"], body["error"]);
  EXPECT_EQ(body["field"], "input");

  res = PostJson("/eval", {{"args", {"test.py"}}, {"files", {{{"path", "../secrets"}}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  body = json::parse(res->body);
  EXPECT_EQ(body["title"], "Request file is invalid");
  EXPECT_EQ(body["description"], "File path '../secrets' may not traverse beyond root");

  auto client = Client();
  res = client.Post("/eval", "{\"input\": ", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["title"], "Invalid JSON");
  EXPECT_TRUE(fake_.requests().empty());
}

// python-discord's bot names a versioned interpreter on every eval; the service says which
// pool answers to it, and the run goes there. A path no pool serves is Snekbox's 400.
TEST_F(ApiServerTest, EvalExecutablePathPicksThePool) {
  Start();
  auto res =
      PostJson("/eval", {{"input", "1"}, {"executable_path", "/snekbin/python/3.14/bin/python"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  res = PostJson("/eval", {{"input", "1"}, {"executable_path", "/snekbin/python/3.11/bin/python"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  res = PostJson("/eval", {{"input", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  auto requests = fake_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].pool, "py314");
  EXPECT_EQ(requests[1].pool, "default");
  EXPECT_EQ(requests[2].pool, "");

  res = PostJson("/eval", {{"input", "1"}, {"executable_path", "/bin/sh"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  auto body = json::parse(res->body);
  EXPECT_EQ(body["title"], "Request data failed validation");
  EXPECT_EQ(body["field"], "executable_path");
  EXPECT_EQ(fake_.requests().size(), 3u) << "a refused path must not run";
}

TEST_F(ApiServerTest, EvalNonJsonBodyIs415) {
  Start();
  auto client = Client();
  auto res = client.Post("/eval", "{'input': 'foo'}", "application/xml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415);
  auto body = json::parse(res->body);
  EXPECT_EQ(body["title"], "415 Unsupported Media Type");
  EXPECT_THAT(body["description"].get<std::string>(), HasSubstr("application/xml"));
  // A charset parameter is fine.
  fake_.SetBehaviour(Prints("1\n"));
  res = client.Post("/eval", R"x({"input": "print(1)"})x", "application/json; charset=utf-8");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(ApiServerTest, GetOnPostRoutesIs405) {
  Start();
  auto client = Client();
  for (const char* path : {"/eval", "/v1/execute"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 405);
    // /eval answers as Snekbox (Falcon) does: Allow: POST, 405 titled, OPTIONS 200.
    const std::string allow = std::string(path) == "/eval" ? "POST" : "POST, OPTIONS";
    EXPECT_EQ(res->get_header_value("Allow"), allow);
    if (std::string(path) == "/eval") {
      EXPECT_EQ(json::parse(res->body)["title"], "405 Method Not Allowed");
    }
    auto options = client.Options(path);
    ASSERT_TRUE(options);
    EXPECT_EQ(options->status, 200);
    EXPECT_EQ(options->get_header_value("Allow"), allow);
    EXPECT_TRUE(options->body.empty());
  }
  EXPECT_TRUE(fake_.requests().empty());
}

TEST_F(ApiServerTest, EvalEmbeddedNulIsAnsweredWithoutARun) {
  Start();
  auto res = PostJson("/eval", {{"args", {"-c", std::string("print(1)\0", 9)}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body),
            json::parse(R"({"stdout": "ValueError: embedded null byte", "returncode": null,
                            "files": []})"));
  EXPECT_TRUE(fake_.requests().empty());
}

TEST_F(ApiServerTest, EngineRefusalsOnEval) {
  ErrorCode code = ErrorCode::kBusy;
  fake_.SetBehaviour([&](const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&) {
    return Result<exec::RunResult>(Error(code, "no sandbox"));
  });
  Start();
  auto res = PostJson("/eval", {{"input", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "2");
  code = ErrorCode::kUnavailable;  // a sandbox failure: Snekbox's null returncode
  res = PostJson("/eval", {{"input", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  auto body = json::parse(res->body);
  EXPECT_TRUE(body["returncode"].is_null());
  EXPECT_THAT(body["stdout"].get<std::string>(), HasSubstr("no sandbox"));
}

// ---- /v1/execute, JSON ----

TEST_F(ApiServerTest, ExecuteJsonResult) {
  fake_.SetBehaviour(
      [](const exec::RunRequest& request, exec::RunObserver&, const exec::CancelToken&) {
        EXPECT_EQ(request.code, "plot()");
        EXPECT_EQ(request.limits.timeout_s, 5.0);
        EXPECT_EQ(request.pool, "");
        auto r = FakeService::Ok("caf\xc3\xa9 \xff\n");
        r.value = "42";
        r.duration_ms = 7;
        r.images.push_back(exec::Image{"image/png", 2, 1, std::string("\x89PNG\r\n\x1a\n", 8)});
        return Result<exec::RunResult>(r);
      });
  Start();
  auto res = PostJson("/v1/execute", {{"code", "plot()"}, {"timeout_s", 5}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  auto body = json::parse(res->body);
  EXPECT_EQ(body["verdict"], "ok");
  EXPECT_EQ(body["exit_code"], 0);
  EXPECT_EQ(body["stdout"], "caf\xc3\xa9 \xEF\xBF\xBD\n");
  EXPECT_EQ(body["value"], "42");
  EXPECT_EQ(body["duration_ms"], 7);
  ASSERT_EQ(body["images"].size(), 1u);
  EXPECT_EQ(*Base64Decode(body["images"][0]["data_base64"].get<std::string>()),
            std::string("\x89PNG\r\n\x1a\n", 8));
  for (const char* field : {"stderr", "traceback", "files", "output_truncated", "files_truncated",
                            "detail", "signal", "pool"}) {
    EXPECT_TRUE(body.contains(field)) << field;
  }
}

TEST_F(ApiServerTest, ExecuteBadInputGetsAJsonErrorNamingTheField) {
  fake_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&) {
    return Result<exec::RunResult>(Error(ErrorCode::kInvalidArgument, "unknown pool \"gpu\""));
  });
  options_.max_code_bytes = 64;
  Start();
  struct Case {
    json body;
    int status;
    json field;
  };
  const std::vector<Case> cases = {
      {json::object(), 400, "code"},
      {{{"code", 1}}, 400, "code"},
      {{{"code", "1"}, {"timeout_s", "ten"}}, 400, "timeout_s"},
      {{{"code", "1"}, {"session_id", "s-1"}}, 400, "session_id"},
      {{{"code", "1"}, {"files", {{{"path", "a"}, {"content_base64", "%%%"}}}}},
       400,
       "files[0].content_base64"},
      {{{"code", std::string(65, 'x')}}, 413, "code"},
      {{{"code", "1"}, {"pool", "gpu"}}, 400, "pool"},
      {json::array(), 400, nullptr},
  };
  for (const auto& c : cases) {
    auto res = PostJson("/v1/execute", c.body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << c.body.dump();
    auto body = json::parse(res->body);
    EXPECT_EQ(body["field"], c.field) << c.body.dump();
    EXPECT_TRUE(body["error"].is_string());
  }
  auto client = Client();
  auto res = client.Post("/v1/execute", "code=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415);
  res = client.Post("/v1/execute", "not json", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("not valid JSON"));
}

TEST_F(ApiServerTest, ExecuteEngineRefusals) {
  ErrorCode code = ErrorCode::kBusy;
  fake_.SetBehaviour([&](const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&) {
    return Result<exec::RunResult>(Error(code, "refused"));
  });
  Start();
  auto res = PostJson("/v1/execute", {{"code", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "2");
  code = ErrorCode::kUnavailable;
  res = PostJson("/v1/execute", {{"code", "1"}});
  EXPECT_EQ(res->status, 503);
  EXPECT_FALSE(res->has_header("Retry-After"));
  code = ErrorCode::kInternal;
  res = PostJson("/v1/execute", {{"code", "1"}});
  EXPECT_EQ(res->status, 500);
  EXPECT_TRUE(json::parse(res->body)["field"].is_null());
}

TEST_F(ApiServerTest, RateLimitedRunsAre429WithRetryAfterAndTheLimitNamed) {
  fake_.SetBehaviour([](const exec::RunRequest& request, exec::RunObserver&,
                        const exec::CancelToken&) {
    EXPECT_EQ(request.principal, "local");  // the HTTP API says whom a run is for
    return Result<exec::RunResult>(
        Error(ErrorCode::kRateLimited, "limit (per_principal.runs_per_minute)").WithRetryAfter(7));
  });
  Start();
  auto res = PostJson("/v1/execute", {{"code", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "7");
  EXPECT_NE(json::parse(res->body)["error"].get<std::string>().find("per_principal"),
            std::string::npos)
      << res->body;
  auto eval = PostJson("/eval", {{"input", "1"}});
  ASSERT_TRUE(eval);
  EXPECT_EQ(eval->status, 429);
  EXPECT_EQ(eval->get_header_value("Retry-After"), "7");
  auto stream = PostStream({{"code", "1"}});
  EXPECT_EQ(stream.status, 429);
}

// ---- /v1/execute, Server-Sent Events ----

TEST_F(ApiServerTest, StreamEventsArriveWhileTheCodeRuns) {
  fake_.SetBehaviour(
      [](const exec::RunRequest&, exec::RunObserver& observer, const exec::CancelToken&) {
        observer.OnStarted();
        std::string out;
        for (int i = 0; i < 3; ++i) {
          const std::string line = std::to_string(i) + "\n";
          observer.OnOutput(exec::Stream::kStdout, line);
          out += line;
          std::this_thread::sleep_for(300ms);
        }
        observer.OnOutput(exec::Stream::kStderr, "warn\n");
        exec::Image image{"image/png", 3, 2, "PNG"};
        observer.OnImage(image);
        exec::OutputFile file{"out.csv", 4, "text/csv", "a,b\n"};
        observer.OnFile(file);
        auto r = FakeService::Ok(out, "warn\n");
        r.images.push_back(image);
        r.files.push_back(file);
        return Result<exec::RunResult>(r);
      });
  Start();
  auto stream = PostStream({{"code", "loop()"}});
  ASSERT_EQ(stream.status, 200);
  EXPECT_EQ(std::string(httplib::detail::get_header_value(stream.headers, "Content-Type", 0, "")),
            "text/event-stream");
  EXPECT_EQ(
      std::string(httplib::detail::get_header_value(stream.headers, "X-Accel-Buffering", 0, "")),
      "no");
  EXPECT_EQ(std::string(httplib::detail::get_header_value(stream.headers, "Cache-Control", 0, "")),
            "no-cache");
  std::vector<std::string> names;
  for (const auto& e : stream.events) names.push_back(e.name);
  EXPECT_THAT(names, ::testing::ElementsAre("stdout", "stdout", "stdout", "stderr", "image", "file",
                                            "result"));
  ASSERT_EQ(stream.events.size(), 7u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(json::parse(stream.events[static_cast<std::size_t>(i)].data),
              json({{"text", std::to_string(i) + "\n"}}));
  }
  // The first line was delivered well before the run ended.
  EXPECT_LT(stream.events[0].at + 500ms, stream.events[6].at);
  EXPECT_EQ(json::parse(stream.events[4].data)["data_base64"], "UE5H");
  EXPECT_EQ(json::parse(stream.events[5].data)["path"], "out.csv");
  auto result = json::parse(stream.events[6].data);
  EXPECT_EQ(result["verdict"], "ok");
  EXPECT_EQ(result["stdout"], "0\n1\n2\n");
  EXPECT_EQ(result["files"][0]["content_base64"], "YSxiCg==");
}

TEST_F(ApiServerTest, StreamDecodesUtf8AcrossChunks) {
  fake_.SetBehaviour(
      [](const exec::RunRequest&, exec::RunObserver& observer, const exec::CancelToken&) {
        observer.OnStarted();
        observer.OnOutput(exec::Stream::kStdout, "caf\xc3");
        observer.OnOutput(exec::Stream::kStdout, "\xa9 \xff");
        observer.OnOutput(exec::Stream::kStdout, "\xe2\x82");  // never completed
        return Result<exec::RunResult>(FakeService::Ok("caf\xc3\xa9 \xff\xe2\x82"));
      });
  Start();
  auto stream = PostStream({{"code", "x"}});
  ASSERT_EQ(stream.status, 200);
  std::string text;
  for (const auto& e : stream.events) {
    if (e.name == "stdout") text += json::parse(e.data)["text"].get<std::string>();
  }
  EXPECT_EQ(text, "caf\xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(stream.events.back().name, "result");
}

TEST_F(ApiServerTest, StreamSendsKeepalivesDuringSilence) {
  options_.sse_keepalive = 200ms;
  fake_.SetBehaviour(
      [](const exec::RunRequest&, exec::RunObserver& observer, const exec::CancelToken&) {
        observer.OnStarted();
        std::this_thread::sleep_for(900ms);
        return Result<exec::RunResult>(FakeService::Ok());
      });
  Start();
  auto stream = PostStream({{"code", "sleep()"}});
  ASSERT_EQ(stream.status, 200);
  int keepalives = 0;
  for (const auto& e : stream.events) {
    if (e.name.empty()) {
      EXPECT_EQ(e.data, ": keepalive");
      ++keepalives;
    }
  }
  EXPECT_GE(keepalives, 2);
  EXPECT_EQ(stream.events.back().name, "result");
}

TEST_F(ApiServerTest, StreamRefusedBeforeStartIsAPlainHttpError) {
  fake_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&) {
    return Result<exec::RunResult>(Error(ErrorCode::kInvalidArgument, "timeout_s: too long"));
  });
  Start();
  auto stream = PostStream({{"code", "1"}, {"timeout_s", 1e6}});
  EXPECT_EQ(stream.status, 400);
  EXPECT_EQ(json::parse(stream.error_body)["field"], "timeout_s");
}

TEST_F(ApiServerTest, StreamRefusedAfterItBeganEndsWithAnErrorEvent) {
  options_.sse_start_wait = 100ms;
  fake_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&) {
    std::this_thread::sleep_for(400ms);  // no sandbox came free in time
    return Result<exec::RunResult>(Error(ErrorCode::kBusy, "no sandbox"));
  });
  Start();
  auto stream = PostStream({{"code", "1"}});
  ASSERT_EQ(stream.status, 200);
  ASSERT_EQ(stream.events.size(), 1u);
  EXPECT_EQ(stream.events[0].name, "error");
  auto data = json::parse(stream.events[0].data);
  EXPECT_EQ(data["status"], 503);
  EXPECT_THAT(data["error"].get<std::string>(), HasSubstr("busy"));
}

TEST_F(ApiServerTest, VanishedStreamClientCancelsTheRun) {
  fake_.SetBehaviour(
      [](const exec::RunRequest&, exec::RunObserver& observer, const exec::CancelToken& cancel) {
        observer.OnStarted();
        observer.OnOutput(exec::Stream::kStdout, "started\n");
        FakeService::WaitForCancel(cancel, 10s);
        auto r = FakeService::Ok("started\n");
        r.verdict = cancel.IsCancelled() ? exec::Verdict::kCancelled : exec::Verdict::kOk;
        return Result<exec::RunResult>(r);
      });
  Start();
  const auto start = Clock::now();
  auto stream = PostStream({{"code", "forever()"}}, /*stop_after=*/1);
  EXPECT_EQ(stream.status, 200);
  EXPECT_TRUE(fake_.WaitForCancelled(1, 5s)) << "the run was not cancelled";
  EXPECT_LT(Clock::now() - start, 5s);
  for (int i = 0; i < 100 && api_->active_runs() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(api_->active_runs(), 0u);
}

TEST_F(ApiServerTest, ShutdownCancelsRunsAndRefusesNewOnes) {
  fake_.SetBehaviour(
      [](const exec::RunRequest&, exec::RunObserver& observer, const exec::CancelToken& cancel) {
        observer.OnStarted();
        FakeService::WaitForCancel(cancel, 10s);
        auto r = FakeService::Ok();
        r.verdict = exec::Verdict::kCancelled;
        r.exit_code = -1;
        r.detail = "cancelled by the caller";
        return Result<exec::RunResult>(r);
      });
  Start();
  std::string json_body;
  Stream stream;
  std::thread json_client([&] {
    auto res = PostJson("/v1/execute", {{"code", "forever()"}});
    if (res) json_body = res->body;
  });
  std::thread stream_client([&] { stream = PostStream({{"code", "forever()"}}); });
  ASSERT_TRUE(fake_.WaitForRuns(2, 5s));
  std::this_thread::sleep_for(100ms);
  api_->Shutdown();
  json_client.join();
  stream_client.join();
  ASSERT_FALSE(json_body.empty());
  EXPECT_EQ(json::parse(json_body)["verdict"], "cancelled");
  ASSERT_FALSE(stream.events.empty());
  EXPECT_EQ(json::parse(stream.events.back().data)["verdict"], "cancelled");
  auto res = PostJson("/v1/execute", {{"code", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  res = PostJson("/eval", {{"input", "1"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
}

// ---- /openapi.json ----

TEST_F(ApiServerTest, OpenApiDescribesEveryRoute) {
  Start();
  auto client = Client();
  auto res = client.Get("/openapi.json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  auto doc = json::parse(res->body);
  EXPECT_EQ(doc["openapi"], "3.1.0");
  EXPECT_EQ(doc["info"]["version"], "test");
  for (const char* path :
       {"/eval", "/v1/execute", "/healthz", "/openapi.json", "/v1/sessions", "/v1/sessions/{id}",
        "/v1/sessions/{id}/files", "/v1/sessions/{id}/files/{path}"}) {
    EXPECT_TRUE(doc["paths"].contains(path)) << path;
  }
  EXPECT_TRUE(doc["paths"]["/v1/sessions"].contains("post"));
  EXPECT_TRUE(doc["paths"]["/v1/sessions/{id}/files/{path}"].contains("put"));
  EXPECT_TRUE(doc["paths"]["/v1/sessions/{id}/files/{path}"].contains("delete"));
  EXPECT_TRUE(doc["paths"]["/v1/sessions"]["post"]["responses"].contains("429"));
  EXPECT_TRUE(doc["components"]["schemas"]["ExecuteRequest"]["properties"].contains("session_id"));
  EXPECT_TRUE(
      doc["components"]["schemas"]["ExecuteResult"]["properties"].contains("session_reset"));
  const auto& ok = doc["paths"]["/v1/execute"]["post"]["responses"]["200"]["content"];
  EXPECT_TRUE(ok.contains("application/json"));
  EXPECT_TRUE(ok.contains("text/event-stream"));
  // Every $ref resolves.
  std::function<void(const json&)> check = [&](const json& node) {
    if (node.is_object()) {
      if (auto ref = node.find("$ref"); ref != node.end()) {
        const std::string name =
            ref->get<std::string>().substr(std::string("#/components/schemas/").size());
        EXPECT_TRUE(doc["components"]["schemas"].contains(name)) << name;
      }
      for (const auto& [k, v] : node.items()) check(v);
    } else if (node.is_array()) {
      for (const auto& v : node) check(v);
    }
  };
  check(doc);
}

}  // namespace
}  // namespace sandbox::api
