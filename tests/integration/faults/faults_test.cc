// Fault injection against the real engine: the server binary on a second dockerd of the
// tests' own (fault_env.h), which they stop, stall (through a proxy) and whose containers they
// kill, pause and remove from outside. Every run must end with a clear verdict, the server must
// stay responsive and bounded, and no container may be left behind.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "integration/faults/fault_env.h"
#include "integration/server/server_process.h"
#include "sandbox/docker/client.h"
#include "sandbox/runner/sandbox_spec.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using nlohmann::json;
using sandbox::testing::EngineProxy;
using sandbox::testing::FreePort;
using sandbox::testing::SecondEngine;
using sandbox::testing::ServerProcess;
using sandbox::testing::TestInstanceId;
using sandbox::testing::ThreadCount;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

// The engine, its client and the image, shared by every test of this binary.
class Faults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The main engine's bridge must survive the second engine (it once deleted docker0).
    const bool had_docker0 = std::system("ip link show docker0 >/dev/null 2>&1") == 0;
    engine_ = new SecondEngine();
    ASSERT_TRUE(engine_->Start()) << "the second dockerd did not start; see " << engine_->dir()
                                  << "/dockerd.log";
    if (had_docker0) {
      EXPECT_EQ(std::system("ip link show docker0 >/dev/null 2>&1"), 0)
          << "starting the second dockerd removed the main engine's docker0";
    }
    ASSERT_TRUE(engine_->EnsureImage(sandbox::testing::TestImage()))
        << "could not load " << sandbox::testing::TestImage() << " into the second engine";
    curl_ = new docker::CurlGlobal();
  }
  static void TearDownTestSuite() {
    delete engine_;  // stops dockerd
    engine_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(engine_, nullptr);
    if (!engine_->running()) {
      ASSERT_TRUE(engine_->Start());
    }
    docker::ClientOptions options;
    options.transport.host = engine_->host();
    auto client = docker::Client::Connect(*curl_, options);
    ASSERT_TRUE(client.ok()) << client.error().ToString();
    client_ = std::move(*client);
  }

  // The config members of a server on `docker_host`: one pool without preload (fast starts).
  static std::string Config(const std::string& docker_host, int min_idle, int max_total,
                            const std::string& extra_pool = "") {
    return R"("docker": {"host": ")" + docker_host +
           R"(", "call_timeout_ms": 5000}, "sessions": {"enabled": false}, "pools": [{"name": "default", "min_idle": )" +
           std::to_string(min_idle) + R"(, "max_total": )" + std::to_string(max_total) +
           R"(, "preload": [], "warm_plot": false, "acquire_timeout_ms": 10000)" + extra_pool +
           "}]";
  }

  std::vector<docker::ContainerSummary> ContainersOf(const std::string& instance) const {
    docker::ListOptions list;
    list.filters = {{"label", {std::string(runner::kInstanceLabel) + "=" + instance}}};
    auto found = client_->ListContainers(list);
    return found.ok() ? *found : std::vector<docker::ContainerSummary>{};
  }

  struct Reply {
    int status = 0;  // 0: no answer
    json body;
    std::string verdict() const { return body.is_object() ? body.value("verdict", "") : ""; }
    std::string detail() const { return body.is_object() ? body.value("detail", "") : ""; }
  };

  // For the report: what a faulted run answered.
  static void Note(const std::string& what, const Reply& r) {
    std::fprintf(stderr, "[faults] %s: HTTP %d verdict \"%s\" detail \"%s\"\n", what.c_str(),
                 r.status, r.verdict().c_str(),
                 r.body.is_object() && r.body.contains("error") ? r.body["error"].dump().c_str()
                                                                : r.detail().c_str());
  }

  static Reply Execute(int port, const std::string& code, double timeout_s = 10) {
    httplib::Client http("127.0.0.1", port);
    http.set_read_timeout(180, 0);
    json request = {{"code", code}, {"timeout_s", timeout_s}};
    auto res = http.Post("/v1/execute", request.dump(), "application/json");
    Reply reply;
    if (!res) return reply;
    reply.status = res->status;
    reply.body = json::parse(res->body, nullptr, false);
    return reply;
  }

  static Reply Health(int port) {
    httplib::Client http("127.0.0.1", port);
    http.set_read_timeout(30, 0);
    auto res = http.Get("/healthz");
    Reply reply;
    if (!res) return reply;
    reply.status = res->status;
    reply.body = json::parse(res->body, nullptr, false);
    return reply;
  }

  static int Leased(int port) {
    auto h = Health(port);
    if (!h.body.is_object() || !h.body.contains("pools")) return -1;
    return h.body["pools"][0].value("leased", -1);
  }

  // Every container of `instance` gone (after the server's shutdown or the engine's clean-up).
  bool NoContainersLeft(const std::string& instance) const {
    return WaitFor([&] { return ContainersOf(instance).empty(); }, seconds(60));
  }

  static SecondEngine* engine_;
  static docker::CurlGlobal* curl_;
  std::unique_ptr<docker::Client> client_;
};

SecondEngine* Faults::engine_ = nullptr;
docker::CurlGlobal* Faults::curl_ = nullptr;

constexpr const char* kSleepCode = "import time\nprint('begun', flush=True)\ntime.sleep(60)\n";

// 1. dockerd stops while runs are in flight, and comes back.
TEST_F(Faults, EngineStoppedDuringRunsAndStartedAgain) {
  const auto instance = TestInstanceId("faults-engine");
  ServerProcess server(instance, FreePort(), Config(engine_->host(), 2, 4));
  ASSERT_TRUE(WaitFor([&] { return server.Ready(2); }, seconds(120)));

  std::vector<std::future<Reply>> runs;
  runs.reserve(3);
  for (int i = 0; i < 2; ++i) {
    runs.push_back(
        std::async(std::launch::async, [&] { return Execute(server.port(), kSleepCode, 90); }));
  }
  ASSERT_TRUE(WaitFor([&] { return Leased(server.port()) == 2; }, seconds(60)));
  std::this_thread::sleep_for(seconds(2));  // past `started`: the code runs
  engine_->Stop();

  for (auto& run : runs) {
    Reply r = run.get();
    Note("engine stopped mid-run", r);
    EXPECT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.verdict(), "internal") << r.body.dump();
    EXPECT_FALSE(r.detail().empty()) << "an internal verdict must say why";
  }
  // Meanwhile /healthz answers, and says the engine is down.
  Reply health = Health(server.port());
  std::fprintf(stderr, "[faults] /healthz with the engine down: %d %s\n", health.status,
               health.body.dump().substr(0, 300).c_str());
  EXPECT_EQ(health.status, 503) << health.body.dump();
  EXPECT_EQ(health.body.value("status", ""), "degraded") << health.body.dump();
  EXPECT_FALSE(health.body.value("engine", "").empty());
  EXPECT_NE(health.body.value("engine", ""), "reachable");

  ASSERT_TRUE(engine_->Start());
  // The pool refills by itself once the engine is back (start back-off is at most 30 s).
  EXPECT_TRUE(WaitFor([&] { return server.Ready(2); }, seconds(150)))
      << Health(server.port()).body.dump();
  Reply after = Execute(server.port(), "print(6 * 7)");
  EXPECT_EQ(after.verdict(), "ok") << after.body.dump();
  EXPECT_EQ(after.body.value("stdout", ""), "42\n");
  server.Stop(SIGTERM);
  EXPECT_TRUE(NoContainersLeft(instance)) << ContainersOf(instance).size() << " left";
}

// 2a. Idle pool containers killed, removed or paused from outside: the next run still
// succeeds (the lost sandbox is replaced before any code runs).
TEST_F(Faults, IdleContainersBrokenFromOutsideDoNotFailTheNextRun) {
  const auto instance = TestInstanceId("faults-idle");
  ServerProcess server(instance, FreePort(), Config(engine_->host(), 2, 4));
  for (const std::string action : {"kill", "rm -f", "pause"}) {
    SCOPED_TRACE(action);
    ASSERT_TRUE(WaitFor([&] { return server.Ready(2); }, seconds(120)));
    // Serve one run first, so the idle sandboxes are past their first `ready` (prepared).
    ASSERT_EQ(Execute(server.port(), "pass").verdict(), "ok");
    ASSERT_TRUE(WaitFor([&] { return server.Ready(2); }, seconds(120)));
    auto before = ContainersOf(instance);
    ASSERT_FALSE(before.empty());
    for (const auto& c : before) engine_->Cli(action + " " + c.id);
    Reply r = Execute(server.port(), "print('still fine')");
    EXPECT_EQ(r.verdict(), "ok") << r.body.dump();
    EXPECT_EQ(r.body.value("stdout", ""), "still fine\n");
    if (action == "pause") {
      // The paused ones are retired: removed by the server, not merely forgotten.
      for (const auto& c : before) engine_->Cli("unpause " + c.id);
    }
  }
  server.Stop(SIGTERM);
  EXPECT_TRUE(NoContainersLeft(instance)) << ContainersOf(instance).size() << " left";
}

// 2b. Containers killed, removed or paused while their run's code runs.
TEST_F(Faults, ContainersBrokenMidRunEndTheRunClearly) {
  const auto instance = TestInstanceId("faults-midrun");
  ServerProcess server(instance, FreePort(), Config(engine_->host(), 1, 3));
  struct Case {
    std::string action;
    std::string verdict;
  };
  for (const Case& c :
       {Case{"kill", "internal"}, Case{"rm -f", "internal"}, Case{"pause", "timeout"}}) {
    SCOPED_TRACE(c.action);
    ASSERT_TRUE(WaitFor([&] { return server.Ready(1); }, seconds(120)));
    auto run = std::async(std::launch::async, [&] {
      return Execute(server.port(), kSleepCode, c.action == "pause" ? 3 : 60);
    });
    ASSERT_TRUE(WaitFor([&] { return Leased(server.port()) == 1; }, seconds(60)));
    std::this_thread::sleep_for(seconds(1));  // past `started`: the code runs
    for (const auto& container : ContainersOf(instance))
      engine_->Cli(c.action + " " + container.id);
    Reply r = run.get();
    Note(c.action + " mid-run", r);
    EXPECT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.verdict(), c.verdict) << r.body.dump();
    EXPECT_FALSE(r.detail().empty()) << r.body.dump();
    // Whatever was paused and not lent is retired by the server's health check or the next
    // lend; unpause none of them: the server must cope.
    Reply next = Execute(server.port(), "print('next')");
    EXPECT_EQ(next.verdict(), "ok") << next.body.dump();
  }
  server.Stop(SIGTERM);
  EXPECT_TRUE(NoContainersLeft(instance)) << ContainersOf(instance).size() << " left";
}

// 3. An engine that answers slowly, then not at all (a stalling proxy in between).
TEST_F(Faults, SlowAndStalledEngine) {
  const auto instance = TestInstanceId("faults-stall");
  EngineProxy proxy(engine_->socket(), engine_->dir());
  ServerProcess server(instance, FreePort(), Config(proxy.host(), 1, 2));
  ASSERT_TRUE(WaitFor([&] { return server.Ready(1); }, seconds(120)));
  ASSERT_EQ(Execute(server.port(), "pass").verdict(), "ok");
  ASSERT_TRUE(WaitFor([&] { return server.Ready(1); }, seconds(120)));
  const int threads_before = ThreadCount(server.pid());
  ASSERT_GT(threads_before, 0);

  // Slow: every chunk either way waits 200 ms; runs still complete.
  proxy.SetMode("delay 200");
  Reply slow = Execute(server.port(), "print('slow but fine')", 20);
  EXPECT_EQ(slow.verdict(), "ok") << slow.body.dump();

  // Stalled: nothing comes back. Runs end at their deadlines, /healthz keeps answering.
  proxy.SetMode("stall");
  std::vector<std::future<Reply>> runs;
  runs.reserve(3);
  for (int i = 0; i < 3; ++i) {
    runs.push_back(
        std::async(std::launch::async, [&] { return Execute(server.port(), "print(1)", 2); }));
  }
  std::this_thread::sleep_for(seconds(3));
  for (int i = 0; i < 3; ++i) {
    Reply h = Health(server.port());
    EXPECT_EQ(h.status, 503) << "/healthz must answer while the engine stalls: " << h.body.dump();
  }
  const int threads_stalled = ThreadCount(server.pid());
  for (auto& run : runs) {
    Reply r = run.get();
    Note("stalled engine", r);
    ASSERT_NE(r.status, 0) << "a run got no answer at all";
    if (r.status == 200) {
      // The sandbox was lent; its run could not reach the harness.
      EXPECT_EQ(r.verdict(), "timeout") << r.body.dump();
    } else {
      // No sandbox could be had in time: refused, saying the engine does not answer.
      EXPECT_EQ(r.status, 503) << r.body.dump();
      EXPECT_NE(r.body.dump().find("Docker engine does not answer"), std::string::npos)
          << r.body.dump();
    }
  }
  const int threads_after_runs = ThreadCount(server.pid());
  proxy.SetMode("pass");
  EXPECT_TRUE(WaitFor([&] { return server.Ready(1); }, seconds(150)))
      << Health(server.port()).body.dump();
  Reply back = Execute(server.port(), "print('back')");
  EXPECT_EQ(back.verdict(), "ok") << back.body.dump();
  const int threads_after = ThreadCount(server.pid());
  std::fprintf(stderr,
               "[faults] server threads: %d before, %d stalled, %d after the runs, %d after\n",
               threads_before, threads_stalled, threads_after_runs, threads_after);
  // The server's threads are a fixed set (HTTP workers, pool workers): none per stalled call.
  EXPECT_LE(threads_stalled, threads_before + 2);
  EXPECT_LE(threads_after, threads_before + 2);
  server.Stop(SIGTERM);
  EXPECT_TRUE(NoContainersLeft(instance)) << ContainersOf(instance).size() << " left";
}

// 4. The code fills the sandbox's /tmp: a clear verdict, and the next run works.
TEST_F(Faults, FullTmpfs) {
  const auto instance = TestInstanceId("faults-tmpfs");
  // /tmp of 16 MiB, below the 64 MiB file-size limit: the disk fills first.
  ServerProcess server(
      instance, FreePort(),
      Config(engine_->host(), 1, 2,
             R"(, "limits": {"tmpfs_bytes": 16777216}, "max_limits": {"tmpfs_bytes": 16777216})"));
  ASSERT_TRUE(WaitFor([&] { return server.Ready(1); }, seconds(120)));
  Reply full = Execute(server.port(),
                       "with open('/tmp/fill', 'wb') as f:\n"
                       "    while True:\n"
                       "        f.write(b'x' * (1 << 20))\n");
  Note("tmpfs full", full);
  EXPECT_EQ(full.verdict(), "error") << full.body.dump();
  EXPECT_NE(full.body.dump().find("No space left on device"), std::string::npos)
      << full.body.dump();
  Reply next =
      Execute(server.port(), "open('/tmp/small', 'wb').write(b'y' * (1 << 20))\nprint('written')");
  EXPECT_EQ(next.verdict(), "ok") << next.body.dump();
  EXPECT_EQ(next.body.value("stdout", ""), "written\n");
  server.Stop(SIGTERM);
  EXPECT_TRUE(NoContainersLeft(instance));
}

// 5. The server SIGKILLed under load, then started again: its leftovers go at start-up and
// nothing else of the engine is touched.
TEST_F(Faults, KilledUnderLoadThenRestarted) {
  const auto instance = TestInstanceId("faults-kill9");
  const auto unrelated_instance = TestInstanceId("faults-unrelated");
  // Containers that are not this instance's: another instance's, and an unlabelled one.
  std::vector<std::string> unrelated;
  for (const auto& labels : std::vector<std::map<std::string, std::string>>{
           {{std::string(runner::kManagedLabel), "true"},
            {std::string(runner::kInstanceLabel), unrelated_instance},
            {"io.sandbox-mcp.test", "true"}},
           {{"io.sandbox-mcp.test", "true"}}}) {
    docker::ContainerSpec spec;
    spec.image = sandbox::testing::TestImage();
    spec.cmd = {"python3", "-c", "import time; time.sleep(600)"};
    spec.labels = labels;
    spec.host_config.network_mode = "none";
    auto created = client_->CreateContainer(spec);
    ASSERT_TRUE(created.ok()) << created.error().ToString();
    unrelated.push_back(created->id);
    ASSERT_TRUE(client_->StartContainer(created->id).ok());
  }

  std::vector<std::string> leftovers;
  {
    ServerProcess first(instance, FreePort(), Config(engine_->host(), 2, 4));
    ASSERT_TRUE(WaitFor([&] { return first.Ready(2); }, seconds(120)));
    std::vector<std::future<Reply>> runs;
    runs.reserve(3);
    for (int i = 0; i < 3; ++i) {
      runs.push_back(
          std::async(std::launch::async, [&] { return Execute(first.port(), kSleepCode, 60); }));
    }
    ASSERT_TRUE(WaitFor([&] { return Leased(first.port()) >= 2; }, seconds(60)));
    // Paused containers cannot see the server's end (their harness would exit and the engine
    // remove them): they stay behind as true leftovers.
    for (const auto& c : ContainersOf(instance)) {
      engine_->Cli("pause " + c.id);
      leftovers.push_back(c.id);
    }
    first.Stop(SIGKILL);
    for (auto& run : runs) run.wait();  // the connections broke
  }
  ASSERT_FALSE(leftovers.empty());
  for (const auto& id : leftovers) EXPECT_TRUE(client_->InspectContainer(id).ok());

  ServerProcess second(instance, FreePort(), Config(engine_->host(), 2, 4));
  ASSERT_TRUE(WaitFor([&] { return second.Ready(2); }, seconds(120)));
  for (const auto& id : leftovers) {
    EXPECT_FALSE(client_->InspectContainer(id).ok())
        << "the killed server's container " << id.substr(0, 12) << " was not removed";
  }
  for (const auto& id : unrelated) {
    auto info = client_->InspectContainer(id);
    EXPECT_TRUE(info.ok() && info->state.running)
        << "a container of another instance or none was touched: " << id.substr(0, 12);
  }
  Reply r = Execute(second.port(), "print('served')");
  EXPECT_EQ(r.verdict(), "ok") << r.body.dump();
  second.Stop(SIGTERM);
  EXPECT_TRUE(NoContainersLeft(instance));
  docker::RemoveOptions rm;
  rm.force = true;
  for (const auto& id : unrelated) (void)client_->RemoveContainer(id, rm);
}

}  // namespace
}  // namespace sandbox
