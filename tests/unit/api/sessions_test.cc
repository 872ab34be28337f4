// The HTTP API's session routes and /v1/execute with session_id, on a real httplib::Server in
// front of a FakeSessionService: status codes and bodies, principals kept apart, raw file bytes
// both ways, and the server without sessions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <thread>

#include "sandbox/api/http_api.h"
#include "support/fake_service.h"
#include "support/fake_session_service.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;
using sandbox::testing::FakeSessionService;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class ApiSessionsTest : public ::testing::Test {
 protected:
  void Start(bool with_sessions = true) {
    options_.version = "test";
    options_.sse_poll = 50ms;
    options_.sse_start_wait = 2000ms;
    options_.session_max_file_bytes = 1024;
    // "Bearer <name>" is the principal <name>; no header is "local".
    options_.principal = [](std::string_view authorization) {
      return authorization.starts_with("Bearer ") ? std::string(authorization.substr(7))
                                                  : std::string("local");
    };
    auto logger = std::make_shared<spdlog::logger>("api-test",
                                                   std::make_shared<spdlog::sinks::null_sink_mt>());
    api_ =
        std::make_unique<HttpApi>(engine_, with_sessions ? &sessions_ : nullptr, options_, logger);
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
  static httplib::Headers As(const std::string& who) {
    return {{"Authorization", "Bearer " + who}};
  }
  std::string CreateAs(const std::string& who, const json& body = json::object()) {
    auto res = Client().Post("/v1/sessions", As(who), body.dump(), "application/json");
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 201) << res->body;
    return json::parse(res->body)["session_id"];
  }

  ApiOptions options_;
  sandbox::testing::FakeService engine_;
  FakeSessionService sessions_;
  httplib::Server server_;
  std::unique_ptr<HttpApi> api_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(ApiSessionsTest, CreateGetListClose) {
  Start();
  auto client = Client();
  auto res = client.Post("/v1/sessions", As("alice"),
                         json{{"pool", "big"}, {"timeout_s", 60}, {"memory_bytes", 1 << 28}}.dump(),
                         "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  json created = json::parse(res->body);
  const std::string id = created["session_id"];
  EXPECT_EQ(res->get_header_value("Location"), "/v1/sessions/" + id);
  EXPECT_EQ(created["pool"], "big");
  EXPECT_EQ(created["memory_limit_bytes"], 1 << 28);
  EXPECT_EQ(created["timeout_s"], 60.0);
  for (auto field : {"age_s", "idle_s", "expires_in_s", "busy", "runs", "restarts", "memory_bytes",
                     "output_bytes", "created_unix_ms"}) {
    EXPECT_TRUE(created.contains(field)) << field;
  }
  EXPECT_EQ(sessions_.calls().back(), "Create alice ");

  // An empty body (no Content-Type at all) takes the defaults.
  res = client.Post("/v1/sessions", As("alice"), "", "");
  ASSERT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(json::parse(res->body)["pool"], "default");

  res = client.Get("/v1/sessions", As("alice"));
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["sessions"].size(), 2u);
  EXPECT_EQ(json::parse(res->body)["sessions"][0]["session_id"], id);

  res = client.Get(("/v1/sessions/" + id).c_str(), As("alice"));
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["session_id"], id);

  res = client.Delete(("/v1/sessions/" + id).c_str(), As("alice"));
  EXPECT_EQ(res->status, 204);
  EXPECT_TRUE(res->body.empty());
  res = client.Get(("/v1/sessions/" + id).c_str(), As("alice"));
  EXPECT_EQ(res->status, 404);
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("not found"));
}

TEST_F(ApiSessionsTest, AnotherPrincipalsSessionIs404) {
  Start();
  const std::string id = CreateAs("alice");
  auto client = Client();
  const std::string base = "/v1/sessions/" + id;
  EXPECT_EQ(client.Get(base.c_str(), As("bob"))->status, 404);
  EXPECT_EQ(client.Delete(base.c_str(), As("bob"))->status, 404);
  EXPECT_EQ(client.Get((base + "/files").c_str(), As("bob"))->status, 404);
  EXPECT_EQ(client.Put((base + "/files/a.txt").c_str(), As("bob"), "x", "text/plain")->status, 404);
  auto run = client.Post("/v1/execute", As("bob"), json{{"code", "1"}, {"session_id", id}}.dump(),
                         "application/json");
  EXPECT_EQ(run->status, 404);
  EXPECT_EQ(json::parse(client.Get("/v1/sessions", As("bob"))->body)["sessions"], json::array());
  EXPECT_EQ(client.Get(base.c_str(), As("alice"))->status, 200);
  // A malformed id is simply not found.
  auto bad = client.Get("/v1/sessions/a.b", As("alice"));
  EXPECT_EQ(bad->status, 404);
  EXPECT_EQ(json::parse(bad->body)["field"], "session_id");
}

TEST_F(ApiSessionsTest, CreateRefusals) {
  Start();
  auto client = Client();
  auto res = client.Post("/v1/sessions", As("alice"), R"({"ttl": 5})", "application/json");
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "ttl");
  res = client.Post("/v1/sessions", As("alice"), R"({"pool": "gpu"})", "application/json");
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "pool");
  res = client.Post("/v1/sessions", As("alice"), "pool=big", "application/x-www-form-urlencoded");
  EXPECT_EQ(res->status, 415);
  res = client.Post("/v1/sessions", As("alice"), "{", "application/json");
  EXPECT_EQ(res->status, 400);

  for (int i = 0; i < 4; ++i) CreateAs("alice");
  res = client.Post("/v1/sessions", As("alice"), "{}", "application/json");
  EXPECT_EQ(res->status, 429);
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("limit of 4"));
  CreateAs("bob");  // a quota per principal

  sessions_.FailNext(Error(ErrorCode::kBusy, "no session container within 10 s"));
  res = client.Post("/v1/sessions", As("bob"), "{}", "application/json");
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "2");
}

TEST_F(ApiSessionsTest, FilesRawBytesBothWays) {
  Start();
  const std::string id = CreateAs("alice");
  auto client = Client();
  const std::string files = "/v1/sessions/" + id + "/files";
  const std::string csv = "month,total\n1,10\n";
  auto res = client.Put((files + "/data/sales.csv").c_str(), As("alice"), csv, "text/csv");
  ASSERT_EQ(res->status, 200) << res->body;
  json written = json::parse(res->body);
  EXPECT_EQ(written["path"], "data/sales.csv");
  EXPECT_EQ(written["size"], csv.size());
  EXPECT_EQ(written["mime_type"], "text/csv");

  const std::string binary("\x89PNG\r\n\x1a\n\x00\xff", 10);
  res = client.Put((files + "/out%20put.png").c_str(), As("alice"), binary,
                   "application/octet-stream");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["path"], "out put.png");  // percent-decoded

  res = client.Get(files.c_str(), As("alice"));
  ASSERT_EQ(res->status, 200);
  json listed = json::parse(res->body);
  EXPECT_EQ(listed["session_id"], id);
  ASSERT_EQ(listed["files"].size(), 2u);
  EXPECT_EQ(listed["files"][0]["path"], "data/sales.csv");
  EXPECT_EQ(listed["files"][1]["path"], "out put.png");
  EXPECT_EQ(listed["truncated"], false);

  res = client.Get((files + "/out%20put.png").c_str(), As("alice"));
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->body, binary);
  EXPECT_EQ(res->get_header_value("Content-Type"), "image/png");
  EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
  // httplib's client percent-decodes header values as it parses them, so the %20 the server
  // sends in filename* arrives as a space here.
  EXPECT_THAT(res->get_header_value("Content-Disposition"),
              HasSubstr("attachment; filename=\"out put.png\"; filename*=UTF-8''out"));

  res = client.Delete((files + "/data/sales.csv").c_str(), As("alice"));
  EXPECT_EQ(res->status, 204);
  res = client.Get((files + "/data/sales.csv").c_str(), As("alice"));
  EXPECT_EQ(res->status, 404);
  res = client.Delete((files + "/data/sales.csv").c_str(), As("alice"));
  EXPECT_EQ(res->status, 404);
}

TEST_F(ApiSessionsTest, FileRefusals) {
  Start();
  const std::string id = CreateAs("alice");
  auto client = Client();
  const std::string files = "/v1/sessions/" + id + "/files";
  auto res = client.Put((files + "/big.bin").c_str(), As("alice"), std::string(1025, 'x'),
                        "application/octet-stream");
  EXPECT_EQ(res->status, 413);
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("1025 bytes"));
  res = client.Put((files + "/..%2Fescape").c_str(), As("alice"), "x", "text/plain");
  EXPECT_EQ(res->status, 400);
  sessions_.AddFile(id, "huge.csv", std::string(2 << 20, 'x'));
  res = client.Get((files + "/huge.csv").c_str(), As("alice"));
  EXPECT_EQ(res->status, 413);
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("download limit"));

  sessions_.SetBusy(id, true);
  res = client.Get(files.c_str(), As("alice"));
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "2");
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("busy"));
}

TEST_F(ApiSessionsTest, ExecuteInASession) {
  Start();
  const std::string id = CreateAs("alice");
  auto client = Client();
  auto res = client.Post("/v1/execute", As("alice"),
                         json{{"code", "x = 1"},
                              {"session_id", id},
                              {"files", {{{"path", "in.txt"}, {"content_base64", "aGk="}}}}}
                             .dump(),
                         "application/json");
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["session_id"], id);
  EXPECT_EQ(body["session_reset"], false);
  EXPECT_TRUE(body["session_notice"].is_null());
  EXPECT_EQ(body["stdout"], "ran in " + id + "\n");
  EXPECT_TRUE(engine_.requests().empty());
  EXPECT_EQ(sessions_.calls().back(), "Run alice " + id);
  ASSERT_EQ(sessions_.runs().size(), 1u);
  EXPECT_EQ(sessions_.runs()[0].files[0].content, "hi");

  res = client.Post("/v1/execute", As("alice"),
                    json{{"code", "1"}, {"session_id", id}, {"memory_bytes", 1 << 20}}.dump(),
                    "application/json");
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "memory_bytes");

  sessions_.run_script = [](const std::string&, const exec::RunRequest&, exec::RunObserver&,
                            const exec::CancelToken&) -> Result<exec::RunResult> {
    exec::RunResult r;
    r.verdict = exec::Verdict::kMemory;
    r.session_reset = true;
    r.detail = "killed by the memory limit; the session was restarted empty";
    return r;
  };
  res = client.Post("/v1/execute", As("alice"), json{{"code", "x"}, {"session_id", id}}.dump(),
                    "application/json");
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["session_reset"], true);
  EXPECT_EQ(json::parse(res->body)["verdict"], "memory");

  sessions_.SetBusy(id, true);
  res = client.Post("/v1/execute", As("alice"), json{{"code", "x"}, {"session_id", id}}.dump(),
                    "application/json");
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->get_header_value("Retry-After"), "2");
}

TEST_F(ApiSessionsTest, ExecuteInASessionAsAStream) {
  Start();
  const std::string id = CreateAs("alice");
  auto client = Client();
  httplib::Headers headers = As("alice");
  headers.emplace("Accept", "text/event-stream");
  auto res = client.Post("/v1/execute", headers, json{{"code", "1"}, {"session_id", id}}.dump(),
                         "application/json");
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_THAT(res->body, HasSubstr("event: stdout\ndata: {\"text\":\"ran in " + id));
  EXPECT_THAT(res->body, HasSubstr("event: result\n"));
  EXPECT_THAT(res->body, HasSubstr("\"session_id\":\"" + id + "\""));
  // A refusal before the stream begins is a plain HTTP error.
  res = client.Post("/v1/execute", headers,
                    json{{"code", "1"}, {"session_id", "ffffffffffffffff"}}.dump(),
                    "application/json");
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
}

TEST_F(ApiSessionsTest, WithoutSessions) {
  Start(/*with_sessions=*/false);
  auto client = Client();
  auto res = client.Post("/v1/sessions", "{}", "application/json");
  EXPECT_EQ(res->status, 501);
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("disabled"));
  EXPECT_EQ(client.Get("/v1/sessions")->status, 501);
  EXPECT_EQ(client.Get("/v1/sessions/abc/files/x.txt")->status, 501);
  res = client.Post("/v1/execute", json{{"code", "1"}, {"session_id", "abc"}}.dump(),
                    "application/json");
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["field"], "session_id");
  EXPECT_THAT(json::parse(res->body)["error"].get<std::string>(), HasSubstr("disabled"));
  // One-shot runs are unaffected.
  EXPECT_EQ(client.Post("/v1/execute", R"({"code": "1"})", "application/json")->status, 200);
}

}  // namespace
}  // namespace sandbox::api
