// Issue 28 on real engines: one server over the machine's engine ("local") and two more dockerd
// ("e1", "e2": tcp://127.0.0.1 with mutual TLS, tests/support/extra_engines.sh, started by the
// CTest fixture extra_engines). A fresh pool places its starts over all three: runs name the
// engine that served them and land on each; /readyz and /healthz list them. e1's dockerd killed
// (SIGKILL) under load: its runs in flight end `internal` naming it, the others finish, every
// later run succeeds on local and e2; the engine watch marks e1 down (GET /admin/engines),
// /healthz says degraded naming it, /readyz stays ready; back, its leftovers are swept and it
// takes new sandboxes again. e2 stalled (SIGSTOP) the same. Drained through the admin API, e1
// gets no new sandboxes until it is undrained.
// Waits have bounds only as hang guards; nothing here asserts a duration.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/server/server_process.h"

namespace sandbox {
namespace {

using nlohmann::json;
using sandbox::testing::FreePort;
using sandbox::testing::ServerProcess;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

constexpr const char* kAdminToken = "multi-engine-admin-token-0123456789";

// Runs tests/support/extra_engines.sh with `args`; its standard output.
std::string ExtraEngines(const std::string& args, int* status = nullptr) {
  const char* script = std::getenv("SANDBOX_EXTRA_ENGINES");
  EXPECT_NE(script, nullptr);
  std::string out;
  FILE* pipe = ::popen(
      ("bash " + std::string(script == nullptr ? "" : script) + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int rc = ::pclose(pipe);
  if (status != nullptr) *status = rc;
  return out;
}

// The server's configuration: both engines, one fresh pool (every run uses a new sandbox, so
// every run makes a placement), no sessions.
std::string Config() {
  const std::string extra = ExtraEngines("engines-json");
  auto engines = json::parse(extra.substr(extra.find('[')), nullptr, false);
  EXPECT_TRUE(engines.is_array() && engines.size() == 2) << extra;
  if (!engines.is_array()) engines = json::array();
  engines.insert(engines.begin(), json{{"name", "local"}, {"host", "unix:///var/run/docker.sock"}});
  const json pools = json::array({{{"name", "default"},
                                   {"mode", "fresh"},
                                   {"min_idle", 6},
                                   {"max_total", 9},
                                   {"max_concurrent_starts", 2}}});
  return R"("server": {"admin_tokens": {"ops": ")" + std::string(kAdminToken) +
         R"("}}, "docker": {"engines": )" + engines.dump() + R"(}, "pools": )" + pools.dump() +
         R"(, "sessions": {"enabled": false})";
}

class MultiEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // "test-": scripts/test.sh checks that no container of such an instance outlives the run.
    instance_ =
        "test-multi-engine-" + std::to_string(::getpid()) + "-" +
        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000);
    log_path_ = ::testing::TempDir() + "/multi-engine-server.log";
    sandbox::testing::ProcessOptions options;
    options.log_level = "info";
    options.stderr_path = log_path_;
    server_ = std::make_unique<ServerProcess>(instance_, FreePort(), Config(), options);
    ASSERT_TRUE(WaitFor([&] { return server_->Ready(6); }, seconds(300)))
        << "the server did not get 6 idle sandboxes; its log:\n"
        << Log();
  }
  void TearDown() override {
    if (HasFailure()) std::printf("server log:\n%s\n", Log().c_str());
    const bool passed = !HasFailure();
    server_.reset();
    // A killed or stalled engine is started again, so the next test and the fixture's stop
    // find it answering.
    for (const char* i : {"1", "2"}) {
      ExtraEngines(std::string("resume ") + i);
      ExtraEngines(std::string("restart ") + i);
    }
    if (!passed) return;
    // The server stopped: no container of its instance is left on any engine.
    for (const char* i : {"1", "2"}) {
      EXPECT_EQ(ExtraEngines(std::string("docker ") + i +
                             " ps -aq --filter label=io.sandbox-mcp.instance=" + instance_),
                "")
          << "containers left on e" << i;
    }
  }

  std::string Log() const {
    std::string text;
    if (FILE* f = std::fopen(log_path_.c_str(), "r")) {
      char buffer[4096];
      std::size_t n = 0;
      while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
      std::fclose(f);
    }
    return text;
  }

  // POST /v1/execute of `code`; the answer's JSON (null on no answer).
  json Execute(const std::string& code) const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(120, 0);
    auto res = client.Post("/v1/execute", json{{"code", code}}.dump(), "application/json");
    if (!res) return nullptr;
    auto body = json::parse(res->body, nullptr, false);
    if (body.is_discarded()) return json{{"http_status", res->status}, {"raw", res->body}};
    body["http_status"] = res->status;
    return body;
  }
  json Get(const std::string& path, int* status) const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(30, 0);
    auto res = client.Get(path);
    *status = res ? res->status : 0;
    return res ? json::parse(res->body, nullptr, false) : json();
  }

  // GET /admin/engines: the engine's entry (null when there is none).
  json EngineState(const std::string& name) const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(30, 0);
    auto res =
        client.Get("/admin/engines",
                   httplib::Headers{{"Authorization", std::string("Bearer ") + kAdminToken}});
    if (!res || res->status != 200) return nullptr;
    auto body = json::parse(res->body, nullptr, false);
    if (body.is_discarded()) return nullptr;
    for (const auto& e : body["engines"]) {
      if (e["name"] == name) return e;
    }
    return nullptr;
  }
  bool StateIs(const std::string& name, const std::string& state) const {
    const json e = EngineState(name);
    return e.is_object() && e["state"] == state;
  }
  // POST /admin/engines/{name}/{action}: the status and body.
  json Admin(const std::string& name, const std::string& action, int* status) const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(30, 0);
    auto res =
        client.Post("/admin/engines/" + name + "/" + action,
                    httplib::Headers{{"Authorization", std::string("Bearer ") + kAdminToken}}, "",
                    "application/json");
    *status = res ? res->status : 0;
    return res ? json::parse(res->body, nullptr, false) : json();
  }
  // Fresh runs until one is served by `engine` (each run makes a new placement); false after
  // `tries`.
  bool ARunLandsOn(const std::string& engine, int tries) const {
    for (int i = 0; i < tries; ++i) {
      const json r = Execute("print(1)");
      EXPECT_EQ(r.value("http_status", 0), 200) << r.dump();
      EXPECT_EQ(r["verdict"], "ok") << r.dump();
      if (r["engine"] == engine) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }
  // Containers of this server's instance on extra engine `i` that are not running (left behind).
  std::string StoppedOn(int i) const {
    return ExtraEngines("docker " + std::to_string(i) +
                        " ps -aq --filter label=io.sandbox-mcp.instance=" + instance_ +
                        " --filter status=exited --filter status=created --filter status=dead");
  }

  std::string instance_;
  std::string log_path_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(MultiEngineTest, RunsSpreadOverBothEnginesAndNameTheirs) {
  std::map<std::string, int> served;
  for (int i = 0; i < 15; ++i) {
    const json r = Execute("print(6 * 7)");
    ASSERT_EQ(r.value("http_status", 0), 200) << r.dump();
    EXPECT_EQ(r["verdict"], "ok") << r.dump();
    EXPECT_EQ(r["stdout"], "42\n");
    ASSERT_TRUE(r["engine"].is_string()) << r.dump();
    ++served[r["engine"].get<std::string>()];
  }
  EXPECT_EQ(served.size(), 3u) << json(served).dump();
  EXPECT_TRUE(served.contains("local") && served.contains("e1") && served.contains("e2"))
      << json(served).dump();

  int status = 0;
  const json ready = Get("/readyz", &status);
  EXPECT_EQ(status, 200) << ready.dump();
  EXPECT_EQ(ready["engines"]["local"], "reachable") << ready.dump();
  EXPECT_EQ(ready["engines"]["e1"], "reachable") << ready.dump();
  EXPECT_EQ(ready["engines"]["e2"], "reachable") << ready.dump();
  const json health = Get("/healthz", &status);
  EXPECT_EQ(status, 200) << health.dump();
  EXPECT_EQ(health["status"], "ok") << health.dump();

  httplib::Client client("127.0.0.1", server_->port());
  // Snekbox's /eval names the engine too on a server of several.
  auto eval = client.Post("/eval", R"j({"input": "print(5)"})j", "application/json");
  ASSERT_TRUE(eval);
  const json evaluated = json::parse(eval->body, nullptr, false);
  EXPECT_EQ(evaluated["stdout"], "5\n") << eval->body;
  EXPECT_TRUE(evaluated["engine"].is_string()) << eval->body;
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find(R"(sandbox_engine_up{engine="e1"} 1)"), std::string::npos);
  EXPECT_NE(metrics->body.find(R"(sandbox_engine_runs_total{engine="local"})"), std::string::npos);
  EXPECT_NE(metrics->body.find(R"(sandbox_engine_requests_total{engine="e1")"), std::string::npos);
}

TEST_F(MultiEngineTest, AKilledEngineCostsNoRunAndComesBack) {
  // Under load: six runs in flight, two on each engine (the pool's six idle sandboxes).
  std::vector<json> in_flight(6);
  {
    std::vector<std::jthread> clients;
    for (auto& answer : in_flight) {
      clients.emplace_back([this, &answer] {
        answer =
            Execute("import time\nprint('started', flush=True)\ntime.sleep(20)\nprint('done')");
      });
    }
    ASSERT_TRUE(WaitFor(
        [&] {
          int status = 0;
          const json health = Get("/healthz", &status);
          return health.is_object() && health["pools"][0].value("leased", 0) >= 6;
        },
        seconds(60)));
    std::this_thread::sleep_for(std::chrono::seconds(2));  // their code has started
    int status = 0;
    const std::string killed = ExtraEngines("kill 1", &status);
    ASSERT_EQ(status, 0) << killed;
  }
  // Every run ended: those on e1 `internal` naming it (their output had reached the caller, so
  // they are not run again), the others as their code said.
  int lost = 0;
  for (const auto& r : in_flight) {
    ASSERT_EQ(r.value("http_status", 0), 200) << r.dump();
    if (r["engine"] == "e1") {
      ++lost;
      EXPECT_EQ(r["verdict"], "internal") << r.dump();
      EXPECT_NE(r["detail"].get<std::string>().find("e1"), std::string::npos) << r.dump();
    } else {
      EXPECT_EQ(r["verdict"], "ok") << r.dump();
      EXPECT_EQ(r["stdout"], "started\ndone\n") << r.dump();
    }
  }
  EXPECT_GE(lost, 1) << "no run was in flight on e1";
  // Every later run succeeds: a sandbox of e1 lent before its loss is seen is replaced before
  // the code starts, and new sandboxes start on local and e2.
  for (int i = 0; i < 8; ++i) {
    const json r = Execute("print('still here')");
    ASSERT_EQ(r.value("http_status", 0), 200) << r.dump();
    EXPECT_EQ(r["verdict"], "ok") << r.dump();
    EXPECT_EQ(r["stdout"], "still here\n") << r.dump();
    EXPECT_NE(r["engine"], "e1") << r.dump();
  }
  int status = 0;
  const json health = Get("/healthz", &status);
  EXPECT_EQ(status, 200) << health.dump();
  EXPECT_EQ(health["status"], "degraded") << health.dump();
  EXPECT_NE(health["engines"]["e1"], "reachable") << health.dump();
  EXPECT_EQ(health["engines"]["local"], "reachable") << health.dump();
  EXPECT_EQ(health["engines"]["e2"], "reachable") << health.dump();
  const json ready = Get("/readyz", &status);
  EXPECT_EQ(status, 200) << ready.dump();

  ASSERT_TRUE(WaitFor([&] { return StateIs("e1", "down"); }, seconds(60)))
      << EngineState("e1").dump();
  EXPECT_NE(EngineState("e1").value("why", ""), "");

  const std::string restarted = ExtraEngines("restart 1", &status);
  ASSERT_EQ(status, 0) << restarted;
  // Back once it answers three pings and this instance's leftovers there are gone.
  ASSERT_TRUE(WaitFor([&] { return StateIs("e1", "up"); }, seconds(120)))
      << EngineState("e1").dump();
  EXPECT_TRUE(WaitFor([&] { return StoppedOn(1).empty(); }, seconds(30)))
      << "leftovers on e1 after it came back: " << StoppedOn(1);
  EXPECT_TRUE(ARunLandsOn("e1", 200)) << "no run was served by e1 after it came back";
  EXPECT_EQ(Get("/healthz", &status)["status"], "ok");
}

TEST_F(MultiEngineTest, AStalledEngineCostsNoRunAndComesBack) {
  int status = 0;
  const std::string stalled = ExtraEngines("stall 2", &status);
  ASSERT_EQ(status, 0) << stalled;
  // A run lent a sandbox of e2 waits for the watch to mark e1 down (seconds), is cancelled there
  // and runs again on another engine; nothing is answered wrong and nothing hangs.
  for (int i = 0; i < 6; ++i) {
    const json r = Execute("print('through')");
    ASSERT_EQ(r.value("http_status", 0), 200) << r.dump();
    EXPECT_EQ(r["verdict"], "ok") << r.dump();
    EXPECT_NE(r["engine"], "e2") << r.dump();
  }
  ASSERT_TRUE(WaitFor([&] { return StateIs("e2", "down"); }, seconds(60)))
      << EngineState("e2").dump();
  const std::string resumed = ExtraEngines("resume 2", &status);
  ASSERT_EQ(status, 0) << resumed;
  ASSERT_TRUE(WaitFor([&] { return StateIs("e2", "up"); }, seconds(120)))
      << EngineState("e2").dump();
  EXPECT_TRUE(ARunLandsOn("e2", 200)) << "no run was served by e2 after it resumed";
}

TEST_F(MultiEngineTest, ADrainedEngineTakesNoNewSandboxesUntilUndrained) {
  ASSERT_TRUE(StateIs("e1", "up")) << EngineState("e1").dump();
  int status = 0;
  const json drained = Admin("e1", "drain", &status);
  ASSERT_EQ(status, 200) << drained.dump();
  EXPECT_EQ(drained["state"], "draining") << drained.dump();
  for (int i = 0; i < 8; ++i) {
    const json r = Execute("print(2)");
    ASSERT_EQ(r.value("http_status", 0), 200) << r.dump();
    EXPECT_NE(r["engine"], "e1") << r.dump();
  }
  // Its idle sandboxes went: none of this instance runs there any more.
  EXPECT_TRUE(WaitFor(
      [&] {
        return ExtraEngines("docker 1 ps -q --filter label=io.sandbox-mcp.instance=" + instance_) ==
               "";
      },
      seconds(60)));
  // The pool still has engines that take sandboxes: ready.
  const json ready = Get("/readyz", &status);
  EXPECT_EQ(status, 200) << ready.dump();
  const json unknown = Admin("e9", "drain", &status);
  EXPECT_EQ(status, 404) << unknown.dump();
  const json undrained = Admin("e1", "undrain", &status);
  ASSERT_EQ(status, 200) << undrained.dump();
  EXPECT_EQ(undrained["state"], "up");
  EXPECT_TRUE(ARunLandsOn("e1", 100)) << "no run was served by e1 after it was undrained";
}

}  // namespace
}  // namespace sandbox
