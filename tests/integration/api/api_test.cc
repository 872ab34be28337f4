// The HTTP API against the real engine: a real SandboxService (its own instance id; no container
// may be left behind) behind a real httplib::Server, read by real HTTP clients (httplib::Client
// and curl). Snekbox's documented requests get Snekbox's answers; /v1/execute returns a plot and
// streams output while the code runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "integration/service/shared_service.h"
#include "sandbox/api/http_api.h"
#include "sandbox/core/base64.h"
#include "support/engine_fixture.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class ApiIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    services_ = new sandbox::testing::SharedServices("api", [](config::PoolConfig& pool) {
      pool.limits.timeout_s = 6;  // /eval has no per-request timeout: the pool's applies
      pool.limits.output_bytes = 256 << 10;
    });
    service_ = services_->Get(config::PoolMode::kRecycle);
    ASSERT_NE(service_, nullptr);
    ApiOptions options;
    options.version = "test";
    options.sse_poll = 100ms;
    api_ = new HttpApi(*service_, options, sandbox::testing::TestLogger("api-test"));
    server_ = new httplib::Server();
    api_->Register(*server_);
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = new std::thread([] { server_->listen_after_bind(); });
    for (int i = 0; i < 400 && !server_->is_running(); ++i) std::this_thread::sleep_for(5ms);
  }
  static void TearDownTestSuite() {
    if (api_ != nullptr) api_->Shutdown();
    if (server_ != nullptr) server_->stop();
    if (thread_ != nullptr) thread_->join();
    delete thread_;
    delete server_;
    delete api_;
    if (services_ != nullptr) services_->Finish();  // checks that no container is left
    delete services_;
  }

  static httplib::Client Client() {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(120, 0);
    return client;
  }

  static json Eval(const json& body, int expected_status = 200) {
    auto client = Client();
    auto res = client.Post("/eval", body.dump(), "application/json");
    EXPECT_TRUE(res) << httplib::to_string(res.error());
    if (!res) return {};
    EXPECT_EQ(res->status, expected_status) << res->body;
    return json::parse(res->body, nullptr, false);
  }

  static inline sandbox::testing::SharedServices* services_ = nullptr;
  static inline service::SandboxService* service_ = nullptr;
  static inline HttpApi* api_ = nullptr;
  static inline httplib::Server* server_ = nullptr;
  static inline std::thread* thread_ = nullptr;
  static inline int port_ = 0;
};

// ---- /eval: Snekbox's documented examples ----

TEST_F(ApiIntegrationTest, SnekboxDocumentedRequestsGetSnekboxAnswers) {
  const json hello = json::parse(R"({"stdout": "Hello\n", "returncode": 0, "files": []})");
  EXPECT_EQ(Eval({{"input", "print('Hello')"}}), hello);
  EXPECT_EQ(Eval({{"args", {"-c", "print('Hello')"}}}), hello);
  EXPECT_EQ(Eval({{"args", {"main.py"}},
                  {"files", {{{"path", "main.py"}, {"content", Base64Encode("print('Hello')")}}}}}),
            hello);
}

TEST_F(ApiIntegrationTest, SnekboxTimeitExample) {
  auto body = Eval({{"input", "pass"}, {"args", {"-m", "timeit"}}});
  EXPECT_EQ(body["returncode"], 0) << body.dump();
  EXPECT_THAT(body["stdout"].get<std::string>(),
              MatchesRegex("[0-9]+ loops?, best of 5: [0-9.]+ [a-z]+ per loop\n"));
}

TEST_F(ApiIntegrationTest, CommandLineArgvAndExecutablePath) {
  auto body = Eval({{"args", {"-c", "import sys; print(sys.argv)", "a", "b c"}},
                    {"executable_path", "/snekbin/python/default/bin/python"}});
  EXPECT_EQ(body["stdout"], "['-c', 'a', 'b c']\n");
  EXPECT_EQ(body["returncode"], 0);
  body = Eval({{"args", {"tool.py", "--flag"}},
               {"files",
                {{{"path", "tool.py"},
                  {"content", Base64Encode("import sys\nprint(__name__, sys.argv)\n")}}}}});
  EXPECT_EQ(body["stdout"], "__main__ ['tool.py', '--flag']\n");
  auto refused = Eval({{"input", "1"}, {"executable_path", "/bin/sh"}}, 400);
  EXPECT_EQ(refused["field"], "executable_path");
}

TEST_F(ApiIntegrationTest, FilesInAndOut) {
  auto body =
      Eval({{"input",
             "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
             "data = open('data/in.txt').read()\n"
             "open('out.txt', 'w').write(data.upper())\n"
             "plt.plot([1, 2, 3]); plt.savefig('output.png')\n"},
            {"files", {{{"path", "data/./x/../in.txt"}, {"content", Base64Encode("hello")}}}}});
  ASSERT_EQ(body["returncode"], 0) << body.dump();
  std::map<std::string, json> files;
  for (const auto& f : body["files"]) files[f["path"].get<std::string>()] = f;
  EXPECT_EQ(files.count("data/in.txt"), 0u) << "an unchanged input file is not returned";
  ASSERT_EQ(files.count("out.txt"), 1u) << body.dump();
  EXPECT_EQ(*Base64Decode(files["out.txt"]["content"].get<std::string>()), "HELLO");
  ASSERT_EQ(files.count("output.png"), 1u);
  auto png = *Base64Decode(files["output.png"]["content"].get<std::string>());
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(files["output.png"]["size"], png.size());
}

TEST_F(ApiIntegrationTest, ReturnCodesFollowSnekbox) {
  auto body = Eval({{"input", "print('before')\n1 / 0\n"}});
  EXPECT_EQ(body["returncode"], 1);
  const std::string out = body["stdout"].get<std::string>();
  EXPECT_THAT(out, HasSubstr("ZeroDivisionError"));
  EXPECT_EQ(out.rfind("before\nTraceback", 0), 0u) << out;

  EXPECT_EQ(Eval({{"input", "import sys; sys.exit(3)"}})["returncode"], 3);
  EXPECT_EQ(
      Eval({{"input", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"}})["returncode"],
      139);
  // The same through the launcher: the child's signal becomes the run's.
  EXPECT_EQ(Eval({{"args",
                   {"-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
                    "x"}}})["returncode"],
            139);
  // An allocation that fails at once raises MemoryError: the code exits 1, as under Snekbox.
  EXPECT_EQ(Eval({{"input", "x = bytearray(1 << 60)"}})["returncode"], 1);
  body = Eval({{"input", "while True:\n    print('x' * 1000)\n"}});
  EXPECT_EQ(body["returncode"], 143);
  EXPECT_THAT(body["stdout"].get<std::string>(), HasSubstr("output truncated"));
  const auto start = Clock::now();
  body = Eval({{"input", "print('spinning', flush=True)\nwhile True:\n    pass\n"}});
  EXPECT_EQ(body["returncode"], 137);
  EXPECT_EQ(body["stdout"], "spinning\n");
  EXPECT_LT(Clock::now() - start, 20s);
}

TEST_F(ApiIntegrationTest, EvalBadInput) {
  auto body = Eval({{"args", {"test.py"}}, {"files", {{{"path", "../secrets"}}}}}, 400);
  EXPECT_EQ(body["title"], "Request file is invalid");
  auto client = Client();
  auto res = client.Post("/eval", "{'input': 'foo'}", "application/xml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415);
}

// ---- /v1/execute ----

TEST_F(ApiIntegrationTest, ExecuteJsonWithAPlot) {
  auto client = Client();
  json request = {{"code",
                   "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()\n"
                   "print('plotted')\n6 * 7"},
                  {"timeout_s", 30}};
  auto res = client.Post("/v1/execute", request.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto body = json::parse(res->body);
  EXPECT_EQ(body["verdict"], "ok") << body["detail"] << body["stderr"];
  EXPECT_EQ(body["stdout"], "plotted\n");
  EXPECT_EQ(body["value"], "42");
  ASSERT_EQ(body["images"].size(), 1u);
  EXPECT_EQ(body["images"][0]["mime_type"], "image/png");
  EXPECT_GT(body["images"][0]["width"].get<int>(), 0);
  auto png = *Base64Decode(body["images"][0]["data_base64"].get<std::string>());
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

// Every request-side bound the harness enforces is checked by the server first (one owner:
// runner::InputLimits, ResultLimits and the pool's limits, all sent to the harness): a request
// over one gets 400 naming the field and never reaches a sandbox (no lease is taken). Before,
// 51-64 files or a 256-byte path component passed here and failed inside with verdict `error`.
TEST_F(ApiIntegrationTest, EveryHarnessInputLimitIsCheckedBeforeTheRun) {
  const runner::InputLimits input;  // the service's (SharedServices keeps the defaults)
  auto file = [](const std::string& path, const std::string& content = "x") {
    return json{{"path", path}, {"content_base64", Base64Encode(content)}};
  };
  auto files = [&](int n) {
    json out = json::array();
    for (int i = 0; i < n; ++i) out.push_back(file("f" + std::to_string(i) + ".txt"));
    return out;
  };
  struct Case {
    std::string name;
    json request;
    std::string field;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"one file too many",
       {{"code", "1"}, {"files", files(input.max_files + 1)}},
       "files",
       "limit of " + std::to_string(input.max_files)},
      {"total bytes",
       {{"code", "1"},
        {"files",
         {file("a", std::string(static_cast<std::size_t>(input.max_total_bytes / 2), 'a')),
          file("b", std::string(static_cast<std::size_t>(input.max_total_bytes / 2) + 1, 'b'))}}},
       "files",
       "bytes in all"},
      {"path too long",
       {{"code", "1"}, {"files", {file(std::string(1025, 'p'))}}},
       "files[0].path",
       "longer than 1024 bytes"},
      {"component too long",
       {{"code", "1"}, {"files", {file("ok.txt"), file("d/" + std::string(256, 'c'))}}},
       "files[1].path",
       "component longer than 255 bytes"},
      {"names no file", {{"code", "1"}, {"files", {file("./")}}}, "files[0].path", "names no file"},
      {"twice after normalizing",
       {{"code", "1"}, {"files", {file("a/b"), file("a//./b")}}},
       "files[1].path",
       "given twice"},
      {"file under a file",
       {{"code", "1"}, {"files", {file("a"), file("a/b")}}},
       "files[1].path",
       "conflict"},
      {"absolute", {{"code", "1"}, {"files", {file("/etc/passwd")}}}, "files[0].path", "relative"},
      {"dot-dot", {{"code", "1"}, {"files", {file("a/../../b")}}}, "files[0].path", "\"..\""},
      {"timeout above the pool's maximum",
       {{"code", "1"}, {"timeout_s", 1e6}},
       "timeout_s",
       "at most"},
      {"memory above the pool's",
       {{"code", "1"}, {"memory_bytes", 1LL << 40}},
       "memory_bytes",
       "pool's limit"},
      {"output below the floor", {{"code", "1"}, {"output_bytes", 10}}, "output_bytes", "between"},
  };
  auto acquired = [] {
    std::uint64_t n = 0;
    for (const auto& [name, stats] : service_->PoolStats()) n += stats.acquired_total;
    return n;
  };
  const std::uint64_t before = acquired();
  auto client = Client();
  for (const auto& c : cases) {
    auto res = client.Post("/v1/execute", c.request.dump(), "application/json");
    ASSERT_TRUE(res) << c.name;
    EXPECT_EQ(res->status, 400) << c.name << ": " << res->body.substr(0, 300);
    auto body = json::parse(res->body, nullptr, false);
    EXPECT_EQ(body.value("field", ""), c.field) << c.name << ": " << res->body.substr(0, 300);
    EXPECT_THAT(body.value("error", ""), HasSubstr(c.says)) << c.name;
  }
  EXPECT_EQ(acquired(), before) << "a refused request reached a sandbox";
  // At the limits the run happens and sees every file.
  auto res = client.Post(
      "/v1/execute",
      json{{"code", "import os\nprint(len(os.listdir('.')))"}, {"files", files(input.max_files)}}
          .dump(),
      "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto body = json::parse(res->body);
  EXPECT_EQ(body["verdict"], "ok") << body.dump().substr(0, 500);
  EXPECT_EQ(body["stdout"], std::to_string(input.max_files) + "\n");
}

TEST_F(ApiIntegrationTest, ExecuteRefusesAnUnknownPool) {
  auto client = Client();
  auto res = client.Post("/v1/execute", R"x({"code": "1", "pool": "gpu"})x", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "pool");
}

constexpr const char* kStreamingCode =
    "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.5)\n";

TEST_F(ApiIntegrationTest, StreamShowsOutputBeforeTheResult) {
  auto client = Client();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/execute";
  req.headers = {{"Accept", "text/event-stream"}, {"Content-Type", "application/json"}};
  req.body = json{{"code", kStreamingCode}}.dump();
  std::string buffer;
  std::vector<std::pair<std::string, Clock::time_point>> events;  // name, arrival
  std::vector<std::string> data;
  std::string content_type;
  req.response_handler = [&](const httplib::Response& r) {
    content_type = r.get_header_value("Content-Type");
    return true;
  };
  req.content_receiver = [&](const char* d, std::size_t n, std::uint64_t, std::uint64_t) {
    buffer.append(d, n);
    std::size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string block = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (block.rfind(':', 0) == 0) continue;  // keep-alive comment
      const auto nl = block.find('\n');
      EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
      EXPECT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
      events.emplace_back(block.substr(7, nl - 7), Clock::now());
      data.push_back(block.substr(nl + 7));
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  ASSERT_TRUE(client.send(req, res, error)) << httplib::to_string(error);
  EXPECT_EQ(content_type, "text/event-stream");
  ASSERT_GE(events.size(), 4u);
  std::string text;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i].first, "stdout");
    text += json::parse(data[i])["text"].get<std::string>();
  }
  EXPECT_EQ(text, "0\n1\n2\n");
  EXPECT_EQ(events.back().first, "result");
  auto result = json::parse(data.back());
  EXPECT_EQ(result["verdict"], "ok");
  EXPECT_EQ(result["stdout"], "0\n1\n2\n");
  // "0" arrived while the code still had a second of sleeping ahead.
  EXPECT_GT(events.back().second - events.front().second, 800ms);
}

TEST_F(ApiIntegrationTest, CurlSeesOutputEventsWhileTheCodeRuns) {
  const std::string body = json{{"code", kStreamingCode}}.dump();
  // The body has no single quotes, so it can be quoted for the shell as is.
  ASSERT_EQ(body.find('\''), std::string::npos);
  const std::string command =
      "curl -sN -H 'Accept: text/event-stream' -H 'Content-Type: "
      "application/json' -d '" +
      body + "' http://127.0.0.1:" + std::to_string(port_) + "/v1/execute";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::vector<std::pair<std::string, Clock::time_point>> lines;
  char line[65536];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::string s(line);
    if (s.rfind("event: ", 0) == 0) lines.emplace_back(s.substr(7, s.size() - 8), Clock::now());
  }
  EXPECT_EQ(::pclose(pipe), 0);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines.front().first, "stdout");
  EXPECT_EQ(lines.back().first, "result");
  EXPECT_GT(lines.back().second - lines.front().second, 800ms);
}

TEST_F(ApiIntegrationTest, OpenApiIsServed) {
  auto client = Client();
  auto res = client.Get("/openapi.json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["openapi"], "3.1.0");
}

}  // namespace
}  // namespace sandbox::api
