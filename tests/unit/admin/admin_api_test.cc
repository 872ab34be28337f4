// The admin routes on a real httplib::Server (127.0.0.1, any port) behind the RequestGuard, in
// front of fake pools: admin tokens only, run tokens refused, JSON refusals, disabled admin.
#include "sandbox/admin/admin_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "sandbox/http/request_guard.h"
#include "unit/admin/fake_pools.h"

namespace sandbox::admin {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kRunToken = "run-token-0123456789";
constexpr const char* kAdminToken = "admin-token-0123456789";

class AdminApiTest : public ::testing::Test {
 protected:
  void Serve(std::map<std::string, std::string> admin_tokens) {
    http::GuardOptions options;
    options.token = kRunToken;
    options.admin_tokens = std::move(admin_tokens);
    guard_ = std::make_unique<http::RequestGuard>(options);
    guard_->Install(server_);
    AdminApiOptions api_options;
    api_options.principal = [this](std::string_view auth) { return guard_->AdminPrincipal(auth); };
    api_ = std::make_unique<AdminApi>(tuner_, api_options);
    api_->Register(server_);
    server_.Get("/run-route", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 2000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(server_.is_running());
  }

  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Result Call(const std::string& method, const std::string& path, const char* token,
                       const std::string& body = "") {
    httplib::Client client("127.0.0.1", port_);
    httplib::Headers headers;
    if (token != nullptr) headers.emplace("Authorization", std::string("Bearer ") + token);
    if (method == "GET") return client.Get(path, headers);
    if (method == "POST") return client.Post(path, headers, body, "application/json");
    return client.Patch(path, headers, body, "application/json");
  }

  testing::FakePools pools_;
  PoolTuner tuner_{
      pools_, PoolBounds{}, nullptr,
      std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>())};
  std::unique_ptr<http::RequestGuard> guard_;
  std::unique_ptr<AdminApi> api_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

json Body(const httplib::Result& res) { return json::parse(res->body, nullptr, false); }

TEST_F(AdminApiTest, OnlyAdminTokensOpenTheAdminRoutes) {
  Serve({{"ops", kAdminToken}});
  auto none = Call("GET", "/admin/pools", nullptr);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_THAT(none->body, HasSubstr("admin token"));
  auto run = Call("GET", "/admin/pools", kRunToken);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, 401);  // a run token never works here
  auto admin = Call("GET", "/admin/pools", kAdminToken);
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->status, 200);
  EXPECT_EQ(Body(admin)["pools"][0]["name"], "default");
  // ... and an admin token works nowhere else.
  auto elsewhere = Call("GET", "/run-route", kAdminToken);
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->status, 401);
  EXPECT_EQ(Call("GET", "/run-route", kRunToken)->status, 200);
}

TEST_F(AdminApiTest, WithoutAdminTokensTheRoutesSayAdminIsDisabled) {
  Serve({});
  for (const char* token : {static_cast<const char*>(nullptr), kRunToken}) {
    auto res = Call("GET", "/admin/pools", token);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404);
    EXPECT_THAT(res->body, HasSubstr("admin API is disabled"));
    EXPECT_FALSE(Body(res).is_discarded());
  }
}

TEST_F(AdminApiTest, PatchChangesAndRefusesWithJsonBodies) {
  Serve({{"ops", kAdminToken}});
  auto ok = Call("PATCH", "/admin/pools/default", kAdminToken, R"({"min_idle": 3})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(Body(ok)["min_idle"], 3);
  EXPECT_EQ(pools_.Settings("default")->sizes.min_idle, 3);

  auto bad = Call("PATCH", "/admin/pools/default", kAdminToken, R"({"min_idle": 99})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Body(bad)["error"]["code"], "invalid_argument");
  EXPECT_THAT(Body(bad)["error"]["message"].get<std::string>(), HasSubstr("min_idle"));

  auto not_json = Call("PATCH", "/admin/pools/default", kAdminToken, "{min_idle");
  ASSERT_TRUE(not_json);
  EXPECT_EQ(not_json->status, 400);
  EXPECT_THAT(not_json->body, HasSubstr("not JSON"));

  auto unknown = Call("PATCH", "/admin/pools/gpu", kAdminToken, R"({"min_idle": 1})");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_THAT(Body(unknown)["error"]["message"].get<std::string>(), HasSubstr("gpu"));

  auto run = Call("PATCH", "/admin/pools/default", kRunToken, R"({"min_idle": 1})");
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, 401);
  EXPECT_EQ(pools_.Settings("default")->sizes.min_idle, 3);
}

// A pool name is whatever bytes the path holds, invalid UTF-8 included: the refusal that names
// it is still a JSON body (the bad bytes replaced), never an exception out of the handler.
TEST_F(AdminApiTest, APoolNameOfInvalidUtf8IsRefusedWithJson) {
  Serve({{"ops", kAdminToken}});
  for (const char* method : {"GET", "PATCH"}) {
    auto res = Call(method, "/admin/pools/%FFgpu%C3", kAdminToken, R"({"min_idle": 1})");
    ASSERT_TRUE(res) << method;
    EXPECT_EQ(res->status, 404) << method << ": " << res->body;
    const json body = Body(res);
    ASSERT_FALSE(body.is_discarded()) << res->body;
    EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("\xEF\xBF\xBDgpu"));
  }
}

TEST_F(AdminApiTest, AutoscaledMinIdleIsAConflict) {
  Serve({{"ops", kAdminToken}});
  ASSERT_EQ(Call("PATCH", "/admin/pools/default", kAdminToken,
                 R"({"autoscale": {"enabled": true, "min_idle_ceiling": 4}})")
                ->status,
            200);
  auto conflict = Call("PATCH", "/admin/pools/default", kAdminToken, R"({"min_idle": 1})");
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(Body(conflict)["error"]["code"], "conflict");
}

TEST_F(AdminApiTest, DrainStartsAndReports) {
  Serve({{"ops", kAdminToken}});
  auto drain = Call("POST", "/admin/pools/default/drain", kAdminToken);
  ASSERT_TRUE(drain);
  EXPECT_EQ(drain->status, 202);
  EXPECT_EQ(Body(drain)["to_replace"], 3);
  auto progress = Call("GET", "/admin/pools/default/drain", kAdminToken);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->status, 200);
  EXPECT_EQ(Body(progress)["drains_total"], 1);
  EXPECT_EQ(Call("POST", "/admin/pools/default/drain", kRunToken)->status, 401);
}

TEST_F(AdminApiTest, TokensReloadAtOnce) {
  Serve({{"ops", kAdminToken}});
  guard_->SetTokens(kRunToken, {}, {{"ops2", "another-admin-token-42"}});
  EXPECT_EQ(Call("GET", "/admin/pools", kAdminToken)->status, 401);
  EXPECT_EQ(Call("GET", "/admin/pools", "another-admin-token-42")->status, 200);
  guard_->SetTokens(kRunToken, {}, {});
  EXPECT_EQ(Call("GET", "/admin/pools", "another-admin-token-42")->status, 404);
}

}  // namespace
}  // namespace sandbox::admin
