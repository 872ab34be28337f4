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
#include <string>
#include <thread>

#include "sandbox/runner/container_handle.h"
#include "sandbox/runner/sandbox_spec.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using sandbox::testing::Engine;
using std::chrono::seconds;

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::seconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return condition();
}

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

class ServerProcess {
 public:
  ServerProcess(const std::string& instance, int port) : port_(port) {
    config_path_ = ::testing::TempDir() + "/crash-" + instance + ".json";
    std::ofstream(config_path_)
        << R"({"instance_id": ")" << instance
        << R"(", "pools": [{"name": "default", "min_idle": 1, "max_total": 2}]})";
    const char* bin = std::getenv("SANDBOX_MCP_BIN");
    EXPECT_NE(bin, nullptr);
    std::string listen = "127.0.0.1:" + std::to_string(port);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl(bin, bin, "--listen", listen.c_str(), "--config", config_path_.c_str(), "--log-level",
              "warn", static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~ServerProcess() { Stop(SIGTERM); }

  // True once /healthz reports at least one idle sandbox.
  bool Ready() const {
    httplib::Client client("127.0.0.1", port_);
    auto res = client.Get("/healthz");
    if (!res || res->status != 200) return false;
    auto body = nlohmann::json::parse(res->body, nullptr, false);
    return !body.is_discarded() && body["pools"][0].value("idle", 0) >= 1;
  }

  void Stop(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    std::remove(config_path_.c_str());
  }

 private:
  int port_;
  pid_t pid_ = -1;
  std::string config_path_;
};

TEST(CrashRecoveryTest, KilledServerLeavesNoContainers) {
  const auto instance = sandbox::testing::TestInstanceId("crash");
  ServerProcess server(instance, FreePort());
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  ASSERT_FALSE(ContainersOf(instance).empty());
  server.Stop(SIGKILL);  // no chance to clean up
  EXPECT_TRUE(WaitFor([&] { return ContainersOf(instance).empty(); }, seconds(60)))
      << ContainersOf(instance).size() << " container(s) outlived the server";
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

  ServerProcess server(instance, FreePort());
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

  ServerProcess server(instance, FreePort());
  ASSERT_TRUE(WaitFor([&] { return server.Ready(); }, seconds(120)));
  EXPECT_TRUE(client.InspectContainer(created->id).ok())
      << "another instance's container was removed";
}

}  // namespace
}  // namespace sandbox
