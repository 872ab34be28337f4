// The server binary against the real engine: a server killed with SIGKILL leaves no container
// behind (AutoRemove once the harness sees its stdin close), and a server starting up removes
// containers its instance left earlier (crash recovery).
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "integration/server/server_process.h"
#include "sandbox/runner/container_handle.h"
#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/owner.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using sandbox::testing::Engine;
using sandbox::testing::FreePort;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

// The pool these tests use: one warm sandbox, at most two.
constexpr const char* kPools = R"("pools": [{"name": "default", "min_idle": 1, "max_total": 2}])";

std::vector<std::string> ContainersOf(const std::string& instance) {
  docker::ListOptions list;
  list.filters = {{"label", {"io.sandbox-mcp.instance=" + instance}}};
  auto found = Engine::Get().client().ListContainers(list);
  std::vector<std::string> ids;
  if (found.ok()) {
    for (const auto& c : *found) ids.push_back(c.id);
  }
  return ids;
}

TEST(CrashRecoveryTest, KilledServerLeavesNoContainers) {
  const auto instance = sandbox::testing::TestInstanceId("crash");
  sandbox::testing::ServerProcess server(instance, FreePort(), kPools);
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  ASSERT_FALSE(ContainersOf(instance).empty());
  server.Stop(SIGKILL);  // no chance to clean up
  EXPECT_TRUE(WaitFor([&] { return ContainersOf(instance).empty(); }, seconds(60)))
      << ContainersOf(instance).size() << " container(s) outlived the server";
}

// /healthz carries the counters an operator tunes a pool by; a warm pool has started its
// container through the harness, so its start latency is known.
TEST(CrashRecoveryTest, HealthzReportsPoolCounters) {
  const auto instance = sandbox::testing::TestInstanceId("healthz");
  sandbox::testing::ServerProcess server(instance, FreePort(), kPools);
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  httplib::Client client("127.0.0.1", server.port());
  auto res = client.Get("/healthz");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  auto body = nlohmann::json::parse(res->body);
  ASSERT_EQ(body["pools"].size(), 1U);
  const auto& pool = body["pools"][0];
  EXPECT_EQ(pool["name"], "default");
  EXPECT_GE(pool["idle"].get<int>(), 1);
  EXPECT_GE(pool["created_total"].get<int>(), pool["idle"].get<int>());
  EXPECT_EQ(pool["waiting"].get<int>(), 0);
  EXPECT_GE(pool["destroying"].get<int>(), 0);
  EXPECT_EQ(pool["start_failures_total"].get<int>(), 0);
  EXPECT_EQ(pool["starts_with_waiters_total"].get<int>(), 0);  // a recycle pool never skips
  EXPECT_GT(pool["start_ms_mean"].get<double>(), 0.0);
  EXPECT_GE(pool["start_ms_max"].get<double>(), pool["start_ms_mean"].get<double>());
  EXPECT_FALSE(pool.contains("last_start_error"));  // unauthenticated: counts only
}

// A running container labelled like a sandbox of this instance, with `owner` as its owner
// label (none when empty). Removed by the returned handle if the test fails.
runner::ContainerHandle StartLabelled(const std::string& instance, const std::string& owner) {
  const auto& client = Engine::Get().client();
  docker::ContainerSpec spec;
  spec.image = sandbox::testing::TestImage();
  spec.cmd = {"python3", "-c", "import time; time.sleep(600)"};
  spec.labels = {{std::string(runner::kManagedLabel), "true"},
                 {std::string(runner::kInstanceLabel), instance},
                 {"io.sandbox-mcp.test", "true"}};
  if (!owner.empty()) spec.labels[std::string(service::kOwnerLabel)] = owner;
  spec.host_config.network_mode = "none";
  auto created = client.CreateContainer(spec);
  EXPECT_TRUE(created.ok()) << created.error().ToString();
  if (!created.ok()) return {};
  EXPECT_TRUE(client.StartContainer(created->id).ok());
  return runner::ContainerHandle(&Engine::Get().engine(), created->id, nullptr);
}

// The owner label of a process that has exited: a child of this test, run and reaped.
std::string DeadOwner() {
  auto self = service::DetectOwner(Engine::Get().engine());
  EXPECT_TRUE(self.ok());
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  std::ifstream in("/proc/" + std::to_string(child) + "/stat");
  std::stringstream text;
  text << in.rdbuf();
  auto stat = service::ParseProcStat(text.str());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(stat.has_value());
  service::Owner owner = *self;
  owner.pid = child;
  owner.start_ticks = stat ? stat->start_ticks : 0;
  return service::FormatOwner(owner);
}

TEST(CrashRecoveryTest, StartupRemovesLeftoversOfItsInstance) {
  const auto instance = sandbox::testing::TestInstanceId("leftover");
  const auto& client = Engine::Get().client();
  // A container as an earlier, now dead, process of this instance would have left it.
  auto leftover = StartLabelled(instance, DeadOwner());
  ASSERT_TRUE(leftover);

  sandbox::testing::ServerProcess server(instance, FreePort(), kPools);
  EXPECT_TRUE(WaitFor([&] { return !client.InspectContainer(leftover.id()).ok(); }, seconds(60)))
      << "the server did not remove its instance's leftover container";
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  server.Stop(SIGTERM);
  EXPECT_TRUE(WaitFor([&] { return ContainersOf(instance).empty(); }, seconds(30)));
}

// Containers of a version before the owner label: a running one created recently may be a
// live older server's and is kept; a stopped one is swept.
TEST(CrashRecoveryTest, UnlabelledContainersSweptOnlyWhenStopped) {
  const auto instance = sandbox::testing::TestInstanceId("unlabelled");
  const auto& client = Engine::Get().client();
  auto running = StartLabelled(instance, "");
  auto stopped = StartLabelled(instance, "");
  ASSERT_TRUE(running && stopped);
  ASSERT_TRUE(client.KillContainer(stopped.id()).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto info = client.InspectContainer(stopped.id());
        return info.ok() && !info->state.running;
      },
      seconds(30)));

  sandbox::testing::ServerProcess server(instance, FreePort(), kPools);
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  EXPECT_FALSE(client.InspectContainer(stopped.id()).ok()) << "a stopped leftover was kept";
  EXPECT_TRUE(client.InspectContainer(running.id()).ok())
      << "a running container of an older version (maybe a live server's) was removed";
}

// What the client configurations of docs/mcp.md do: a second server with the same (default)
// instance id starts while one serves. The first one's sandboxes and sessions must survive,
// for a second HTTP server and for a stdio one.
TEST(CrashRecoveryTest, SecondServerOfTheInstanceLeavesTheFirstAlone) {
  const auto instance = sandbox::testing::TestInstanceId("twice");
  const auto& client = Engine::Get().client();
  // No restart grace: the session ends with its server, so the test leaves nothing behind.
  constexpr const char* kWithSessions =
      R"("sessions": {"enabled": true, "max_total": 2, "restart_grace_s": 0},)"
      R"( "pools": [{"name": "default", "min_idle": 1, "max_total": 3}])";
  sandbox::testing::ServerProcess first(instance, FreePort(), kWithSessions);
  ASSERT_TRUE(WaitFor([&] { return first.Ready(); }, seconds(120)));
  httplib::Client http("127.0.0.1", first.port());
  http.set_read_timeout(120, 0);
  auto created = http.Post("/v1/sessions", "{}", "application/json");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  const std::string session = nlohmann::json::parse(created->body)["session_id"];
  auto run_in_session = [&](const std::string& code) {
    nlohmann::json body = {{"code", code}, {"session_id", session}};
    auto res = http.Post("/v1/execute", body.dump(), "application/json");
    return res ? nlohmann::json::parse(res->body, nullptr, false) : nlohmann::json();
  };
  ASSERT_EQ(run_in_session("x = 41").value("verdict", ""), "ok");
  const auto before = ContainersOf(instance);
  ASSERT_GE(before.size(), 2U);  // a pool sandbox and the session's
  std::size_t inspected = 0;
  for (const auto& id : before) {
    // Each names the first server as its owner (else the sweep could not tell it is alive).
    auto info = client.InspectContainer(id);
    // One the pool replaced between the list and here is gone, not wrong (a flake seen once).
    if (!info.ok() && info.error().code() == ErrorCode::kNotFound) continue;
    ASSERT_TRUE(info.ok()) << id.substr(0, 12) << ": " << info.error().ToString();
    ++inspected;
    auto label = info->labels.find(std::string(service::kOwnerLabel));
    ASSERT_NE(label, info->labels.end()) << "no owner label on " << id.substr(0, 12);
    auto owner = service::ParseOwner(label->second);
    ASSERT_TRUE(owner.has_value()) << label->second;
    EXPECT_EQ(owner->pid, first.pid()) << label->second;
  }
  EXPECT_GE(inspected, 1U);

  {
    sandbox::testing::ServerProcess second(instance, FreePort(), kWithSessions);
    ASSERT_TRUE(WaitFor([&] { return second.Ready(); }, seconds(120)));
  }
  {
    // A stdio server: it has swept by the time it answers `initialize`.
    const std::string config_path = ::testing::TempDir() + "/stdio-" + instance + ".json";
    std::ofstream(config_path) << R"({"instance_id": ")" << instance << R"(", )" << kWithSessions
                               << "}";
    const std::string command = std::string(std::getenv("SANDBOX_MCP_BIN")) +
                                " --stdio --log-level warn --config " + config_path;
    FILE* stdio = ::popen(("echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                           "\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                           "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}' | " +
                           command)
                              .c_str(),
                          "r");
    ASSERT_NE(stdio, nullptr);
    char line[4096];
    ASSERT_NE(std::fgets(line, sizeof(line), stdio), nullptr);
    EXPECT_NE(std::string(line).find("\"result\""), std::string::npos) << line;
    ::pclose(stdio);  // its input ended: it shuts down, removing only its own containers
    std::remove(config_path.c_str());
  }
  for (const auto& id : before) {
    EXPECT_TRUE(client.InspectContainer(id).ok())
        << "the first server's container " << id.substr(0, 12) << " was removed";
  }
  auto again = run_in_session("print(x + 1)");
  EXPECT_EQ(again.value("verdict", ""), "ok") << again.dump();
  EXPECT_EQ(again.value("stdout", ""), "42\n") << "the session lost its state";
}

TEST(CrashRecoveryTest, OtherInstancesAreLeftAlone) {
  const auto instance = sandbox::testing::TestInstanceId("mine");
  const auto other = sandbox::testing::TestInstanceId("other");
  const auto& client = Engine::Get().client();
  docker::ContainerSpec spec;
  spec.image = sandbox::testing::TestImage();
  spec.cmd = {"python3", "-c", "import time; time.sleep(600)"};
  spec.labels = {{std::string(runner::kManagedLabel), "true"},
                 {std::string(runner::kInstanceLabel), other},
                 {"io.sandbox-mcp.test", "true"}};
  spec.host_config.network_mode = "none";
  auto created = client.CreateContainer(spec);
  ASSERT_TRUE(created.ok());
  runner::ContainerHandle guard(&Engine::Get().engine(), created->id, nullptr);
  ASSERT_TRUE(client.StartContainer(created->id).ok());

  sandbox::testing::ServerProcess server(instance, FreePort(), kPools);
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  EXPECT_TRUE(client.InspectContainer(created->id).ok())
      << "another instance's container was removed";
}

}  // namespace
}  // namespace sandbox
