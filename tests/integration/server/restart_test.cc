// Upgrades keep sessions (sessions.restart_grace_s): the real server binary, stopped with
// SIGTERM (or killed) and started again with the same instance id, serves a session's
// variables and files again to its owner only; the session container's labels hold the id's
// hash, never the id; past the grace the session is gone and its container removed.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "integration/server/server_process.h"
#include "sandbox/core/sha256.h"
#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/sandbox_service.h"
#include "sandbox/service/session_record.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using nlohmann::json;
using sandbox::testing::Engine;
using sandbox::testing::FreePort;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

constexpr const char* kAlice = "alice-token-0123456789a";
constexpr const char* kBob = "bob-token-0123456789ab";

std::string Config(int grace_s) {
  return R"("server": {"tokens": {"alice": ")" + std::string(kAlice) + R"(", "bob": ")" + kBob +
         R"("}}, "sessions": {"restart_grace_s": )" + std::to_string(grace_s) +
         R"(, "warm": 1}, "pools": [{"name": "default", "min_idle": 1, "max_total": 2}])";
}

httplib::Headers As(const char* token) {
  return {{"Authorization", std::string("Bearer ") + token}};
}

// The running session containers of an instance.
std::vector<docker::ContainerSummary> SessionContainers(const std::string& instance) {
  docker::ListOptions list;
  list.filters = {{"label",
                   {std::string(runner::kInstanceLabel) + "=" + instance,
                    std::string(runner::kModeLabel) + "=session"}}};
  auto found = Engine::Get().client().ListContainers(list);
  return found.ok() ? *found : std::vector<docker::ContainerSummary>{};
}

std::string DockerInspect(const std::string& id) {
  std::string out;
  if (FILE* p = ::popen(("docker inspect " + id + " 2>&1").c_str(), "r")) {
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
    ::pclose(p);
  }
  return out;
}

class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override { instance_ = sandbox::testing::TestInstanceId("restart"); }
  // Whatever the test left (session containers outlive their server by design).
  void TearDown() override {
    server_.reset();
    (void)service::RemoveLeftovers(Engine::Get().engine(), instance_, nullptr);
  }

  void StartServer(int grace_s) {
    server_ =
        std::make_unique<sandbox::testing::ServerProcess>(instance_, FreePort(), Config(grace_s));
    ASSERT_TRUE(WaitFor([&] { return server_->Ready(); }, seconds(180)));
  }
  httplib::Client Client() const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(120, 0);
    return client;
  }
  httplib::Result Execute(const char* token, const std::string& id, const std::string& code) {
    return Client().Post("/v1/execute", As(token), json{{"code", code}, {"session_id", id}}.dump(),
                         "application/json");
  }
  // A session of alice's holding x = 41 and the file notes.txt.
  std::string CreateSession() {
    auto res = Client().Post("/v1/sessions", As(kAlice), "{}", "application/json");
    EXPECT_TRUE(res && res->status == 201) << (res ? res->body : "no answer");
    if (!res || res->status != 201) return {};
    const std::string id = json::parse(res->body)["session_id"];
    auto run = Execute(kAlice, id, "x = 41\nopen('notes.txt', 'w').write('kept across restarts')");
    EXPECT_TRUE(run && run->status == 200) << (run ? run->body : "no answer");
    return id;
  }
  // The owner gets the variable and the file back; nobody else sees the session.
  void ExpectServedAgain(const std::string& id) {
    // bob first, while the restored session is not yet confirmed by its owner, then again.
    EXPECT_EQ(Client().Get(("/v1/sessions/" + id).c_str(), As(kBob))->status, 404);
    EXPECT_EQ(Execute(kBob, id, "x")->status, 404);
    auto run = Execute(kAlice, id, "x + 1");
    ASSERT_TRUE(run);
    ASSERT_EQ(run->status, 200) << run->body;
    EXPECT_EQ(json::parse(run->body)["value"], "42") << run->body;
    auto file = Client().Get(("/v1/sessions/" + id + "/files/notes.txt").c_str(), As(kAlice));
    ASSERT_TRUE(file);
    EXPECT_EQ(file->status, 200) << file->body;
    EXPECT_EQ(file->body, "kept across restarts");
    EXPECT_EQ(Client().Get(("/v1/sessions/" + id).c_str(), As(kBob))->status, 404);
    EXPECT_EQ(Client().Get(("/v1/sessions/" + id + "/files/notes.txt").c_str(), As(kBob))->status,
              404);
    auto listed = Client().Get("/v1/sessions", As(kAlice));
    ASSERT_TRUE(listed);
    EXPECT_EQ(json::parse(listed->body)["sessions"].size(), 1U) << listed->body;
    auto metrics = Client().Get("/metrics", As(kAlice));
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("sandbox_sessions_restored_total 1"), std::string::npos);
  }

  std::string instance_;
  std::unique_ptr<sandbox::testing::ServerProcess> server_;
};

TEST_F(RestartTest, SigtermAndStartAgainKeepsTheSession) {
  StartServer(120);
  const std::string id = CreateSession();
  ASSERT_FALSE(id.empty());
  const int status = server_->Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  // The session's container runs on (the warm one is gone) and its labels hold the id's
  // SHA-256, never the id: nor does anything else docker inspect shows.
  auto left = SessionContainers(instance_);
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left[0].state, "running");
  EXPECT_EQ(left[0].labels.at(std::string(service::kSessionKeyLabel)), Sha256Hex(id));
  for (const auto& [name, value] : left[0].labels) {
    EXPECT_EQ(value.find(id), std::string::npos) << name;
  }
  const std::string inspect = DockerInspect(left[0].id);
  EXPECT_NE(inspect.find(Sha256Hex(id)), std::string::npos) << inspect.substr(0, 400);
  EXPECT_EQ(inspect.find(id), std::string::npos);

  StartServer(120);
  ExpectServedAgain(id);
  // The same container serves it: adopted, not replaced.
  auto now = SessionContainers(instance_);
  EXPECT_TRUE(
      std::any_of(now.begin(), now.end(), [&](const auto& c) { return c.id == left[0].id; }));
}

// No graceful shutdown: the session container is not told anything, its stdin stays open and
// its watchdog has not fired, so the next start adopts it too.
TEST_F(RestartTest, SigkillWithinTheGraceKeepsTheSessionToo) {
  StartServer(120);
  const std::string id = CreateSession();
  ASSERT_FALSE(id.empty());
  server_->Stop(SIGKILL);
  StartServer(120);
  ExpectServedAgain(id);
}

TEST_F(RestartTest, PastTheGraceTheSessionIsGoneAndItsContainerRemoved) {
  StartServer(2);
  const std::string id = CreateSession();
  ASSERT_FALSE(id.empty());
  server_->Stop(SIGTERM);
  // The harness's watchdog ends the container by itself once no server spoke to it for 2 s
  // (a bound: the wait ends as soon as it is gone).
  EXPECT_TRUE(WaitFor([&] { return SessionContainers(instance_).empty(); }, seconds(90)))
      << SessionContainers(instance_).size() << " session container(s) outlived the grace";
  StartServer(2);
  EXPECT_EQ(Client().Get(("/v1/sessions/" + id).c_str(), As(kAlice))->status, 404);
  EXPECT_EQ(Execute(kAlice, id, "x")->status, 404);
  server_->Stop(SIGTERM);
  docker::ListOptions all;
  all.all = true;
  all.filters = {{"label", {std::string(runner::kInstanceLabel) + "=" + instance_}}};
  auto found = Engine::Get().client().ListContainers(all);
  ASSERT_TRUE(found.ok());
  for (const auto& c : *found) {
    EXPECT_NE(c.labels.at(std::string(runner::kModeLabel)), "session")
        << "a session container (" << c.id.substr(0, 12) << ") is still there";
  }
}

}  // namespace
}  // namespace sandbox
