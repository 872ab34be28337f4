// The admin API and SIGHUP reload against the real engine and the real server binary: min_idle
// changed through PATCH is followed by the pool's idle containers, a drain replaces every
// container (an idle one at once, a leased one when its run ends) with new ones, and a rewritten
// configuration file is applied on SIGHUP (tokens and sizes) or, when invalid, kept out with an
// error log line naming the field; values past their upper bounds are refused by the API and on
// SIGHUP alike, and the start workers' threads go when max_concurrent_starts goes down. Waits
// are bounded polls, never timed assertions.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "integration/server/server_process.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using nlohmann::json;
using sandbox::testing::FreePort;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

constexpr const char* kRunToken = "run-token-0123456789";
constexpr const char* kAdminToken = "admin-token-0123456789";
constexpr const char* kOtherAdminToken = "second-admin-token-0123";

// Small, quick containers: no preload, so a start is the container and the harness only.
std::string Config(int min_idle, const std::string& admin_tokens) {
  return R"("server": {"token": ")" + std::string(kRunToken) + R"(", "admin_tokens": )" +
         admin_tokens + R"(}, "sessions": {"enabled": false},
         "pools": [{"name": "default", "min_idle": )" +
         std::to_string(min_idle) + R"(, "max_total": 4, "preload": [], "warm_plot": false}])";
}

std::string AdminTokens(const char* name, const char* token) { return json{{name, token}}.dump(); }

// Container ids of an instance, from the engine itself.
std::set<std::string> Containers(const std::string& instance) {
  std::set<std::string> ids;
  const std::string command =
      "docker ps -aq --no-trunc --filter label=io.sandbox-mcp.instance=" + instance;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return ids;
  char line[256];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    std::string id(line);
    while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
    if (!id.empty()) ids.insert(id);
  }
  ::pclose(pipe);
  return ids;
}

class AdminIntegrationTest : public ::testing::Test {
 protected:
  void Start(int min_idle) {
    instance_ = sandbox::testing::TestInstanceId("admin");
    log_path_ = ::testing::TempDir() + "/" + instance_ + ".log";
    sandbox::testing::ProcessOptions options;
    options.log_level = "info";
    options.stderr_path = log_path_;
    server_ = std::make_unique<sandbox::testing::ServerProcess>(
        instance_, FreePort(), Config(min_idle, AdminTokens("ops", kAdminToken)), options);
    ASSERT_TRUE(WaitFor([&] { return server_->Ready(min_idle); }, seconds(180)));
  }

  void TearDown() override {
    if (server_) server_->Stop(SIGTERM);
    // The server removes its containers when it stops; none may be left.
    if (!instance_.empty()) {
      EXPECT_TRUE(WaitFor([&] { return Containers(instance_).empty(); }, seconds(60)));
    }
  }

  httplib::Result Call(const std::string& method, const std::string& path, const char* token,
                       const std::string& body = "") const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(60, 0);
    httplib::Headers headers = {{"Authorization", std::string("Bearer ") + token}};
    if (method == "GET") return client.Get(path, headers);
    if (method == "POST") return client.Post(path, headers, body, "application/json");
    return client.Patch(path, headers, body, "application/json");
  }

  json Pool() const {
    auto res = Call("GET", "/admin/pools/default", admin_token_);
    if (!res || res->status != 200) return json::object();
    return json::parse(res->body, nullptr, false);
  }

  int Idle() const {
    json pool = Pool();
    return pool.is_object() && pool.contains("sandboxes") ? pool["sandboxes"].value("idle", -1)
                                                          : -1;
  }

  // Idle exactly `n` with nothing starting or being destroyed: the pool settled there.
  bool SettledAt(int n) const {
    json pool = Pool();
    if (!pool.is_object() || !pool.contains("sandboxes")) return false;
    const json& s = pool["sandboxes"];
    return s.value("idle", -1) == n && s.value("starting", -1) == 0 &&
           s.value("destroying", -1) == 0;
  }

  std::string Metrics() const {
    auto res = Call("GET", "/metrics", kRunToken);
    return res && res->status == 200 ? res->body : "";
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string instance_;
  std::string log_path_;
  const char* admin_token_ = kAdminToken;  // the one the server takes now
  std::unique_ptr<sandbox::testing::ServerProcess> server_;
};

TEST_F(AdminIntegrationTest, IdleContainersFollowMinIdleChangedThroughTheApi) {
  Start(1);
  // Run tokens do not work on the admin API.
  auto refused = Call("PATCH", "/admin/pools/default", kRunToken, R"({"min_idle": 3})");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);

  auto raised = Call("PATCH", "/admin/pools/default", kAdminToken, R"({"min_idle": 3})");
  ASSERT_TRUE(raised);
  ASSERT_EQ(raised->status, 200) << raised->body;
  EXPECT_EQ(json::parse(raised->body)["min_idle"], 3);
  EXPECT_TRUE(WaitFor([&] { return SettledAt(3); }, seconds(180))) << Pool().dump();
  EXPECT_EQ(Containers(instance_).size(), 3u);

  auto lowered = Call("PATCH", "/admin/pools/default", kAdminToken, R"({"min_idle": 1})");
  ASSERT_TRUE(lowered);
  ASSERT_EQ(lowered->status, 200) << lowered->body;
  EXPECT_TRUE(WaitFor([&] { return SettledAt(1); }, seconds(120))) << Pool().dump();
  EXPECT_TRUE(WaitFor([&] { return Containers(instance_).size() == 1; }, seconds(60)));

  // Over max_limits: refused with the field named, nothing changed.
  auto bad =
      Call("PATCH", "/admin/pools/default", kAdminToken, R"({"limits": {"timeout_s": 100000}})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("limits.timeout_s"), std::string::npos) << bad->body;

  const std::string metrics = Metrics();
  EXPECT_NE(metrics.find(R"(sandbox_pool_min_idle{pool="default"} 1)"), std::string::npos);
  EXPECT_NE(metrics.find(
                R"(sandbox_admin_changes_total{field="min_idle",pool="default",source="api"} 2)"),
            std::string::npos)
      << metrics;
  EXPECT_NE(Log().find("ops (api) changed pool 'default' min_idle: 1 -> 3"), std::string::npos)
      << Log();
}

TEST_F(AdminIntegrationTest, DrainReplacesEveryContainerLeasedOnesWhenTheirRunEnds) {
  Start(2);
  ASSERT_TRUE(WaitFor([&] { return SettledAt(2); }, seconds(120)));
  // One container busy with a run for a few seconds while the drain begins.
  auto run = std::async(std::launch::async, [&] {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(120, 0);
    return client.Post("/v1/execute", {{"Authorization", std::string("Bearer ") + kRunToken}},
                       json{{"code", "import time; time.sleep(6); print('ran')"}}.dump(),
                       "application/json");
  });
  ASSERT_TRUE(WaitFor([&] { return Pool()["sandboxes"].value("leased", 0) == 1; }, seconds(60)));
  const std::set<std::string> before = Containers(instance_);
  ASSERT_GE(before.size(), 2u);

  auto drain = Call("POST", "/admin/pools/default/drain", kAdminToken);
  ASSERT_TRUE(drain);
  ASSERT_EQ(drain->status, 202) << drain->body;
  const json started = json::parse(drain->body);
  EXPECT_GE(started["to_replace"].get<int>(), 3);  // two or more idle and the leased one
  EXPECT_FALSE(started["done"].get<bool>());

  auto result = run.get();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_NE(result->body.find("ran"), std::string::npos) << result->body;  // not cut short

  EXPECT_TRUE(WaitFor(
      [&] {
        auto res = Call("GET", "/admin/pools/default/drain", kAdminToken);
        return res && res->status == 200 && json::parse(res->body)["done"].get<bool>();
      },
      seconds(120)));
  ASSERT_TRUE(WaitFor([&] { return SettledAt(2); }, seconds(120))) << Pool().dump();
  const std::set<std::string> after = Containers(instance_);
  EXPECT_GE(after.size(), 2u);
  for (const auto& id : before) EXPECT_EQ(after.count(id), 0u) << id << " was not replaced";
  const json progress = Pool()["drain"];
  EXPECT_EQ(progress["remaining"], 0);
  EXPECT_EQ(progress["replaced"], progress["to_replace"]);
}

TEST_F(AdminIntegrationTest, SighupAppliesAValidFileAndKeepsOutAnInvalidOne) {
  Start(1);
  // Valid: min_idle 2 and the admin token replaced.
  server_->WriteConfig(Config(2, AdminTokens("ops2", kOtherAdminToken)));
  ASSERT_EQ(::kill(server_->pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto res = Call("GET", "/admin/pools", kOtherAdminToken);
        return res && res->status == 200;
      },
      seconds(60)));
  EXPECT_EQ(Call("GET", "/admin/pools", kAdminToken)->status, 401);
  admin_token_ = kOtherAdminToken;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto res = Call("GET", "/admin/pools/default", kOtherAdminToken);
        if (!res || res->status != 200) return false;
        const json pool = json::parse(res->body);
        return pool["min_idle"] == 2 && pool["sandboxes"]["idle"] == 2;
      },
      seconds(180)));

  // Invalid: min_idle above max_total. The running configuration stays.
  server_->WriteRawConfig(R"({"instance_id": ")" + instance_ + R"(", "server": {"token": ")" +
                          kRunToken +
                          R"(", "admin_tokens": {"ops3": "third-admin-token-0123"}},
                          "sessions": {"enabled": false},
                          "pools": [{"name": "default", "min_idle": 9, "max_total": 4}]})");
  ASSERT_EQ(::kill(server_->pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metrics().find(R"(sandbox_config_reloads_total{result="rejected"} 1)") !=
               std::string::npos;
      },
      seconds(60)));
  EXPECT_NE(Log().find("pools[0].min_idle"), std::string::npos) << Log();
  EXPECT_EQ(Call("GET", "/admin/pools", "third-admin-token-0123")->status, 401);
  auto still = Call("GET", "/admin/pools/default", kOtherAdminToken);
  ASSERT_TRUE(still);
  ASSERT_EQ(still->status, 200);
  EXPECT_EQ(json::parse(still->body)["min_idle"], 2);

  // A change only a restart applies is logged as ignored; the rest is applied.
  server_->WriteRawConfig(R"({"instance_id": ")" + instance_ + R"(", "server": {"token": ")" +
                          kRunToken + R"(", "admin_tokens": {"ops2": ")" + kOtherAdminToken +
                          R"("}}, "sessions": {"enabled": false},
                          "pools": [{"name": "default", "min_idle": 1, "max_total": 4,
                                     "preload": [], "warm_plot": false,
                                     "image": "sandbox-mcp-python:other"}]})");
  ASSERT_EQ(::kill(server_->pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metrics().find(R"(sandbox_config_reloads_total{result="applied"} 2)") !=
               std::string::npos;
      },
      seconds(60)));
  EXPECT_NE(Log().find("ignored until restart"), std::string::npos) << Log();
  EXPECT_EQ(Pool()["image"], "sandbox-mcp-python:latest");
  EXPECT_TRUE(WaitFor([&] { return Pool()["min_idle"] == 1; }, seconds(30)));
}

// Threads of a process: its /proc/<pid>/task entries.
int Threads(pid_t pid) {
  int n = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++n;
  }
  return n;
}

// Issue 34: PATCH max_concurrent_starts 1500 took the server from 78 to 1,576 threads, which
// stayed after setting it back, and the API took up to 1,000,000. Now each size has an upper
// bound (config/bounds.h) named in the refusal, by the API and on SIGHUP alike, and a lowered
// max_concurrent_starts gives its threads back.
TEST_F(AdminIntegrationTest, SizesPastTheirBoundsAreRefusedAndStartThreadsAreGivenBack) {
  Start(0);  // no containers: nothing starting, so every start worker is idle
  for (const char* huge : {"1500", "1000000"}) {
    auto refused = Call("PATCH", "/admin/pools/default", kAdminToken,
                        std::string(R"({"max_concurrent_starts": )") + huge + "}");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400) << refused->body;
    const json body = json::parse(refused->body, nullptr, false);
    const std::string message = body["error"].value("message", "");
    EXPECT_NE(
        message.find(std::string("max_concurrent_starts: ") + huge + " is above its bound 64"),
        std::string::npos)
        << refused->body;
  }
  EXPECT_EQ(Pool()["max_concurrent_starts"], 2);

  const int before = Threads(server_->pid());
  auto raised =
      Call("PATCH", "/admin/pools/default", kAdminToken, R"({"max_concurrent_starts": 64})");
  ASSERT_TRUE(raised);
  ASSERT_EQ(raised->status, 200) << raised->body;
  const int high = Threads(server_->pid());
  EXPECT_GE(high, before + 60) << "a start worker per concurrent start";
  auto lowered =
      Call("PATCH", "/admin/pools/default", kAdminToken, R"({"max_concurrent_starts": 2})");
  ASSERT_TRUE(lowered);
  ASSERT_EQ(lowered->status, 200) << lowered->body;
  // Back to where it was (a few HTTP workers may come and go meanwhile).
  EXPECT_TRUE(WaitFor([&] { return Threads(server_->pid()) <= before + 4; }, seconds(60)))
      << before << " threads before, " << high << " at 64 starts, " << Threads(server_->pid())
      << " after lowering to 2";

  std::cout << "server threads: " << before << " at 2 starts, " << high << " at 64, "
            << Threads(server_->pid()) << " back at 2\n";

  // The file takes the same bound on SIGHUP: refused, logged with the key, value and bound.
  server_->WriteRawConfig(R"({"instance_id": ")" + instance_ + R"(", "server": {"token": ")" +
                          kRunToken + R"(", "admin_tokens": {"ops": ")" + kAdminToken +
                          R"("}}, "sessions": {"enabled": false},
                          "pools": [{"name": "default", "min_idle": 0, "max_total": 4,
                                     "max_concurrent_starts": 1500,
                                     "preload": [], "warm_plot": false}]})");
  ASSERT_EQ(::kill(server_->pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metrics().find(R"(sandbox_config_reloads_total{result="rejected"} 1)") !=
               std::string::npos;
      },
      seconds(60)));
  EXPECT_NE(Log().find("pools[0].max_concurrent_starts: 1500 is above its bound 64"),
            std::string::npos)
      << Log();
  EXPECT_EQ(Pool()["max_concurrent_starts"], 2);
}

}  // namespace
}  // namespace sandbox
