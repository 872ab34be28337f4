// The server binary under hostile JSON and under one token's load: a request nested 100,000
// levels deep is refused on every JSON route and the server keeps serving (it used to die of a
// stack overflow), and the per-principal run limits answer 429 with Retry-After and a JSON body
// naming the limit while another token's runs go through.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "integration/server/server_process.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using json = nlohmann::json;
using sandbox::testing::FreePort;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

constexpr const char* kAlice = "alice-token-0123456789";
constexpr const char* kBob = "bob-token-0123456789ab";

std::string Deep(int levels) {
  return std::string(static_cast<std::size_t>(levels), '[') +
         std::string(static_cast<std::size_t>(levels), ']');
}

class ServerFixture : public ::testing::Test {
 protected:
  void StartServer(const std::string& extra) {
    server_ = std::make_unique<sandbox::testing::ServerProcess>(
        sandbox::testing::TestInstanceId("fair"), FreePort(),
        R"("server": {"tokens": {"alice": ")" + std::string(kAlice) + R"(", "bob": ")" + kBob +
            R"("}}, "sessions": {"enabled": false},
            "pools": [{"name": "default", "min_idle": 1, "max_total": 3}])" +
            extra);
    ASSERT_TRUE(WaitFor([&] { return server_->Ready(/*idle=*/1); }, seconds(180)));
  }
  httplib::Client Client() const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(60, 0);
    return client;
  }
  httplib::Result Execute(const char* token, const std::string& code) const {
    return Client().Post("/v1/execute", {{"Authorization", std::string("Bearer ") + token}},
                         json{{"code", code}}.dump(), "application/json");
  }
  std::unique_ptr<sandbox::testing::ServerProcess> server_;
};

TEST_F(ServerFixture, DeeplyNestedJsonIsRefusedEverywhereAndTheServerLives) {
  StartServer("");
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kAlice},
                                 {"Accept", "application/json, text/event-stream"}};
  auto client = Client();
  auto init = client.Post("/mcp", auth, R"({"jsonrpc":"2.0","id":1,"method":"initialize",
      "params":{"protocolVersion":"2025-11-25","capabilities":{},
      "clientInfo":{"name":"t","version":"1"}}})",
                          "application/json");
  ASSERT_TRUE(init && init->status == 200);
  httplib::Headers session = auth;
  session.emplace("Mcp-Session-Id", init->get_header_value("Mcp-Session-Id"));
  // The attack of the issue: an initialized session's ping, params nested 100,000 deep (~200 KB).
  const std::string ping =
      R"({"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":)" + Deep(100000) + "}}";
  auto mcp = client.Post("/mcp", session, ping, "application/json");
  ASSERT_TRUE(mcp) << "the server did not answer (crashed?)";
  EXPECT_EQ(mcp->status, 400);
  auto body = json::parse(mcp->body, nullptr, false);
  EXPECT_EQ(body["error"]["code"], -32700) << mcp->body;
  EXPECT_NE(mcp->body.find("deeper than 64 levels"), std::string::npos) << mcp->body;

  for (const char* route : {"/v1/execute", "/eval"}) {
    auto res = client.Post(route, auth, R"({"code": )" + Deep(100000) + "}", "application/json");
    ASSERT_TRUE(res) << route;
    EXPECT_EQ(res->status, 400) << route;
    EXPECT_NE(res->body.find("deeper than 64 levels"), std::string::npos) << res->body;
  }
  // Still alive and serving the same session.
  auto again = client.Post("/mcp", session, R"({"jsonrpc":"2.0","id":3,"method":"ping"})",
                           "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  auto run = Execute(kAlice, "print(6 * 7)");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, 200);
  EXPECT_EQ(json::parse(run->body)["stdout"], "42\n");
}

TEST_F(ServerFixture, OneTokensRunLimitsAre429WhileAnotherTokensRunsGoThrough) {
  StartServer(R"(, "per_principal": {"max_concurrent_runs": 1, "runs_per_minute": 3})");
  // Concurrency: alice's first run holds her only slot; her second is refused at once.
  std::thread slow([&] {
    auto res = Execute(kAlice, "import time; time.sleep(4)");
    EXPECT_TRUE(res && res->status == 200);
  });
  ASSERT_TRUE(WaitFor(
      [&] {
        auto h = Client().Get("/healthz");
        return h && json::parse(h->body, nullptr, false)["pools"][0].value("leased", 0) >= 1;
      },
      seconds(60)));
  auto second = Execute(kAlice, "print(1)");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 429) << second->body;
  EXPECT_EQ(second->get_header_value("Retry-After"), "1");
  EXPECT_NE(second->body.find("per_principal.max_concurrent_runs"), std::string::npos)
      << second->body;
  auto bob = Execute(kBob, "print('bob')");  // bob is not affected
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->status, 200) << bob->body;
  slow.join();

  // Rate: alice started 1 run (the refused one did not count); 2 more fit in the minute.
  for (int i = 0; i < 2; ++i) {
    auto ok = Execute(kAlice, "print(1)");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
  auto limited = Execute(kAlice, "print(1)");
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->status, 429) << limited->body;
  EXPECT_NE(limited->body.find("per_principal.runs_per_minute"), std::string::npos)
      << limited->body;
  const int retry = std::stoi(limited->get_header_value("Retry-After"));
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 20);  // one run per 20 s at 3 per minute
  auto bob2 = Execute(kBob, "print('bob')");
  ASSERT_TRUE(bob2);
  EXPECT_EQ(bob2->status, 200) << bob2->body;
}

}  // namespace
}  // namespace sandbox
