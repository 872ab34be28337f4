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
#include <string>
#include <thread>

#include "integration/server/server_process.h"
#include "sandbox/runner/container_handle.h"
#include "sandbox/runner/sandbox_spec.h"
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

TEST(CrashRecoveryTest, StartupRemovesLeftoversOfItsInstance) {
  const auto instance = sandbox::testing::TestInstanceId("leftover");
  const auto& client = Engine::Get().client();
  // A container as an earlier process of this instance would have left it: running, labelled.
  docker::ContainerSpec spec;
  spec.image = sandbox::testing::TestImage();
  spec.cmd = {"python3", "-c", "import time; time.sleep(600)"};
  spec.labels = {{std::string(runner::kManagedLabel), "true"},
                 {std::string(runner::kInstanceLabel), instance},
                 {"io.sandbox-mcp.test", "true"}};
  spec.host_config.network_mode = "none";
  auto created = client.CreateContainer(spec);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  runner::ContainerHandle guard(&client, created->id, nullptr);  // removes it if the test fails
  ASSERT_TRUE(client.StartContainer(created->id).ok());

  sandbox::testing::ServerProcess server(instance, FreePort(), kPools);
  EXPECT_TRUE(WaitFor([&] { return !client.InspectContainer(created->id).ok(); }, seconds(60)))
      << "the server did not remove its instance's leftover container";
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  server.Stop(SIGTERM);
  EXPECT_TRUE(WaitFor([&] { return ContainersOf(instance).empty(); }, seconds(30)));
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
  runner::ContainerHandle guard(&client, created->id, nullptr);
  ASSERT_TRUE(client.StartContainer(created->id).ok());

  sandbox::testing::ServerProcess server(instance, FreePort(), kPools);
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  EXPECT_TRUE(client.InspectContainer(created->id).ok())
      << "another instance's container was removed";
}

}  // namespace
}  // namespace sandbox
