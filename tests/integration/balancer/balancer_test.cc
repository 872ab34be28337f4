// Issue 28 item 4: two replicas of the server binary (instance ids of their own, server.replica
// r1 and r2, one server.request_state_key_file) behind a real HAProxy running the shipped
// deploy/balancer/haproxy.cfg. Through the balancer: stateless runs reach both replicas; MCP
// sessions (Streamable HTTP and legacy SSE), sandbox sessions (upload, run, download, read as a
// resource) and tasks are each served by the replica their id names; a 2026-07-28 multi
// round-trip opens on the other replica. Then r2 is killed (SIGKILL): everything of r2 answers
// the balancer's 503 JSON `replica_down`, r1's keep working, new stateless runs succeed; r2
// started again adopts its sandbox session (restart grace), which answers again.
// Waits have bounds only as hang guards; nothing here asserts a duration.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "integration/server/server_process.h"
#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/sandbox_service.h"
#include "support/engine_fixture.h"

extern "C" char** environ;

namespace sandbox {
namespace {

using nlohmann::json;
using sandbox::testing::Engine;
using sandbox::testing::FreePort;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

// Debian's haproxy (scripts/host.sh installs it with the test packages); CMake finds it.
std::string HaproxyBinary() {
  const char* found = std::getenv("SANDBOX_HAPROXY");
  std::string bin = found != nullptr ? found : "";
  if (bin.empty() || bin.ends_with("-NOTFOUND")) bin = "/usr/sbin/haproxy";
  return bin;
}

std::string ConfigPath() { return sandbox::testing::SourceDir() + "/deploy/balancer/haproxy.cfg"; }

// Runs `argv` with the extra environment `env`, its output to `log_path`; returns the pid.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& log_path) {
  std::vector<std::string> all_env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) all_env.emplace_back(*e);
  all_env.insert(all_env.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : all_env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    ::execve(argp[0], argp.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> AddressEnv(int balancer, int r1, int r2) {
  return {"BALANCER_ADDR=127.0.0.1:" + std::to_string(balancer),
          "REPLICA1_ADDR=127.0.0.1:" + std::to_string(r1),
          "REPLICA2_ADDR=127.0.0.1:" + std::to_string(r2)};
}

// haproxy -db -f deploy/balancer/haproxy.cfg, stopped (SIGTERM) by the destructor.
class Balancer {
 public:
  Balancer(int port, int r1, int r2)
      : port_(port), log_path_(::testing::TempDir() + "/balancer-haproxy.log") {
    pid_ = Spawn({HaproxyBinary(), "-db", "-f", ConfigPath()}, AddressEnv(port, r1, r2), log_path_);
  }
  ~Balancer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Balancer(const Balancer&) = delete;
  Balancer& operator=(const Balancer&) = delete;

  int port() const { return port_; }
  std::string log() const { return ReadFile(log_path_); }

 private:
  int port_;
  std::string log_path_;
  pid_t pid_ = -1;
};

// An answer through the balancer: status, body and the replica that served it (the
// X-Sandbox-Replica header haproxy.cfg adds; empty for the balancer's own answers).
struct Answer {
  int status = 0;  // 0: no answer at all
  std::string body;
  std::string replica;
  std::string content_type;
  std::string session_header;  // Mcp-Session-Id
  json Json() const { return json::parse(body, nullptr, false); }
};

Answer Of(const httplib::Result& res) {
  Answer a;
  if (!res) return a;
  a.status = res->status;
  a.body = res->body;
  a.replica = res->get_header_value("X-Sandbox-Replica");
  a.content_type = res->get_header_value("Content-Type");
  a.session_header = res->get_header_value("Mcp-Session-Id");
  return a;
}

std::string Describe(const Answer& a) {
  return "HTTP " + std::to_string(a.status) + " from \"" + a.replica +
         "\": " + a.body.substr(0, 600);
}

// The replica an id names: its prefix before the first dash.
std::string PrefixOf(const std::string& id) { return id.substr(0, id.find('-')); }

// A fresh connection per request, so that each is balanced on its own; the read timeout is the
// hang guard.
httplib::Client To(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(10, 0);
  client.set_read_timeout(180, 0);
  return client;
}

// The JSON-RPC message with `id` in an answer that is JSON or an SSE stream of messages.
json RpcMessage(const Answer& a, const json& id) {
  auto whole = a.Json();
  if (!whole.is_discarded()) return whole;
  std::istringstream lines(a.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("data: ", 0) != 0) continue;
    auto message = json::parse(line.substr(6), nullptr, false);
    if (!message.is_discarded() && message.contains("id") && message["id"] == id) return message;
  }
  return json();
}

// ---- MCP, protocol 2025-11-25 (Streamable HTTP sessions) ----

httplib::Headers McpHeaders(const std::string& session = "") {
  httplib::Headers headers = {{"Accept", "application/json, text/event-stream"}};
  if (!session.empty()) {
    headers.emplace("Mcp-Session-Id", session);
    headers.emplace("MCP-Protocol-Version", "2025-11-25");
  }
  return headers;
}

Answer McpInitialize(int port) {
  const json message = {{"jsonrpc", "2.0"},
                        {"id", 1},
                        {"method", "initialize"},
                        {"params",
                         {{"protocolVersion", "2025-11-25"},
                          {"capabilities", json::object()},
                          {"clientInfo", {{"name", "balancer-test"}, {"version", "1"}}}}}};
  Answer a = Of(To(port).Post("/mcp", McpHeaders(), message.dump(), "application/json"));
  if (a.status == 200 && !a.session_header.empty()) {
    const json initialized = {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
    Of(To(port).Post("/mcp", McpHeaders(a.session_header), initialized.dump(), "application/json"));
  }
  return a;
}

Answer McpRun(int port, const std::string& session, int id, const std::string& code) {
  const json message = {{"jsonrpc", "2.0"},
                        {"id", id},
                        {"method", "tools/call"},
                        {"params", {{"name", "run_python"}, {"arguments", {{"code", code}}}}}};
  return Of(To(port).Post("/mcp", McpHeaders(session), message.dump(), "application/json"));
}

// ---- MCP, protocol 2026-07-28 (no session; the SEP-2243 headers) ----

json Meta(const json& capabilities = json::object()) {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", capabilities},
          {"io.modelcontextprotocol/clientInfo", {{"name", "balancer-test"}, {"version", "1"}}}};
}

json TasksCapability() {
  return {{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}};
}

Answer Modern(int port, const std::string& method, const std::string& name, json params) {
  const json message = {{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", params}};
  httplib::Headers headers = {{"Accept", "application/json, text/event-stream"},
                              {"MCP-Protocol-Version", "2026-07-28"},
                              {"Mcp-Method", method},
                              {"Mcp-Name", name}};
  return Of(To(port).Post("/mcp", headers, message.dump(), "application/json"));
}

Answer TaskGet(int port, const std::string& task) {
  return Modern(port, "tasks/get", task, {{"taskId", task}, {"_meta", Meta(TasksCapability())}});
}

// ---- the HTTP API ----

Answer Execute(int port, const std::string& code, const std::string& session = "") {
  json body = {{"code", code}};
  if (!session.empty()) body["session_id"] = session;
  return Of(To(port).Post("/v1/execute", body.dump(), "application/json"));
}

// A legacy HTTP+SSE session: its stream stays open on a raw connection.
class LegacyStream {
 public:
  explicit LegacyStream(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{60, 0};  // a hang guard
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return;
    const std::string request =
        "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) < 0) return;
    if (!ReadUntil("sessionId=") || !ReadUntil("\n")) return;
    const auto at = received_.find("sessionId=") + 10;
    session_ = received_.substr(at, received_.find_first_of("\r\n", at) - at);
    // HAProxy sends header names in lower case.
    std::string head = received_.substr(0, received_.find("\r\n\r\n"));
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string name = "\r\nx-sandbox-replica: ";
    const auto header = head.find(name);
    if (header != std::string::npos) {
      const auto from = header + name.size();
      replica_ = head.substr(from, head.find("\r\n", from) - from);
    }
  }
  ~LegacyStream() {
    if (fd_ >= 0) ::close(fd_);
  }
  LegacyStream(const LegacyStream&) = delete;
  LegacyStream& operator=(const LegacyStream&) = delete;

  // False at the end of the stream or after a minute (a hang guard: keepalive comments keep
  // each read short).
  bool ReadUntil(const std::string& needle) {
    const auto until = std::chrono::steady_clock::now() + seconds(60);
    char buf[4096];
    while (received_.find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() > until) return false;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      received_.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  const std::string& session() const { return session_; }
  const std::string& replica() const { return replica_; }  // that served the stream
  const std::string& received() const { return received_; }

 private:
  int fd_ = -1;
  std::string received_;
  std::string session_;
  std::string replica_;
};

Answer LegacyPing(int port, const std::string& session, const std::string& id) {
  const json ping = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}};
  return Of(
      To(port).Post(("/messages?sessionId=" + session).c_str(), ping.dump(), "application/json"));
}

// The balancer's answer for an id of a replica that is down.
void ExpectReplicaDown(const Answer& a, const std::string& what) {
  EXPECT_EQ(a.status, 503) << what << ": " << Describe(a);
  EXPECT_NE(a.content_type.find("application/json"), std::string::npos) << what;
  const json body = a.Json();
  ASSERT_FALSE(body.is_discarded()) << what << ": " << a.body;
  EXPECT_EQ(body.value("error", ""), "replica_down") << what << ": " << a.body;
  EXPECT_EQ(body.value("replica", ""), "r2") << what << ": " << a.body;
}

// Creates objects through the balancer with `make` (which returns {replica, id}) until each
// replica holds one; returns them by replica. `drop` removes a surplus one.
std::map<std::string, std::string> OneOnEach(
    const std::function<std::pair<std::string, std::string>()>& make,
    const std::function<void(const std::string&)>& drop = nullptr) {
  std::map<std::string, std::string> by_replica;
  for (int i = 0; i < 8 && by_replica.size() < 2; ++i) {
    auto [replica, id] = make();
    if (id.empty()) continue;
    EXPECT_EQ(PrefixOf(id), replica) << "the id " << id << " was minted by " << replica;
    if (by_replica.count(replica) > 0) {
      if (drop) drop(id);
      continue;
    }
    by_replica[replica] = id;
  }
  EXPECT_EQ(by_replica.size(), 2u) << "the balancer did not spread creations over both replicas";
  return by_replica;
}

// Logs a step with the seconds since the test began (CI's log then says where time went; no
// assertion reads it).
class Steps {
 public:
  void operator()(const std::string& what) const {
    const auto s = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start_);
    std::printf("[balancer %6.1f s] %s\n", static_cast<double>(s.count()) / 1000.0, what.c_str());
    std::fflush(stdout);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

constexpr const char* kKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

// What both replicas run: the same configuration but for the replica's name. Sessions outlive
// their server for a while (restart_grace_s), so r2 started again adopts them.
std::string ReplicaConfig(const std::string& replica, const std::string& key_file) {
  return R"("server": {"replica": ")" + replica + R"(", "request_state_key_file": ")" + key_file +
         R"("}, "sessions": {"max_total": 3, "warm": 0, "restart_grace_s": 300},)"
         R"( "pools": [{"name": "default", "min_idle": 1, "max_total": 2}])";
}

TEST(BalancerConfigTest, TheShippedConfigurationIsValid) {
  const std::string log = ::testing::TempDir() + "/balancer-check.log";
  const pid_t pid = Spawn({HaproxyBinary(), "-c", "-f", ConfigPath()},
                          AddressEnv(FreePort(), FreePort(), FreePort()), log);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << (WEXITSTATUS(status) == 127 ? "cannot run " + HaproxyBinary() +
                                           ": install Debian's haproxy (scripts/host.sh does)\n"
                                     : "")
      << ReadFile(log);
}

// server.request_state_key_file is checked at start-up, before the engine is reached: a file
// that is missing or too short stops the server with a line naming the key and the file.
TEST(RequestStateKeyFileTest, AMissingOrShortKeyFileStopsTheServerNamingIt) {
  const char* bin = std::getenv("SANDBOX_MCP_BIN");
  ASSERT_NE(bin, nullptr);
  const std::string dir = ::testing::TempDir();
  const std::string short_key = dir + "/balancer-short.key";
  std::ofstream(short_key) << "too short";
  for (const std::string& key : {dir + "/balancer-no-such.key", short_key}) {
    const std::string config = dir + "/balancer-key-config.json";
    std::ofstream(config) << R"({"instance_id": ")"
                          << sandbox::testing::TestInstanceId("balancer-key")
                          << R"(", "server": {"request_state_key_file": ")" << key << R"("}})";
    const std::string log = dir + "/balancer-key.log";
    const pid_t pid = Spawn(
        {bin, "--listen", "127.0.0.1:" + std::to_string(FreePort()), "--config", config}, {}, log);
    int status = 0;
    const bool exited =
        WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, seconds(60));
    if (!exited) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    ASSERT_TRUE(exited) << "the server started with the key file " << key;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
    const std::string said = ReadFile(log);
    EXPECT_NE(said.find("server.request_state_key_file"), std::string::npos) << said;
    EXPECT_NE(said.find(key), std::string::npos) << said;
    std::remove(config.c_str());
    std::remove(log.c_str());
  }
  std::remove(short_key.c_str());
}

class BalancerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_file_ = ::testing::TempDir() + "/balancer-request-state.key";
    std::ofstream(key_file_) << kKey;
    instances_ = {{"r1", sandbox::testing::TestInstanceId("balancer-r1")},
                  {"r2", sandbox::testing::TestInstanceId("balancer-r2")}};
    ports_ = {{"r1", FreePort()}, {"r2", FreePort()}};
    StartReplica("r1");
    StartReplica("r2");
    balancer_ = std::make_unique<Balancer>(FreePort(), ports_["r1"], ports_["r2"]);
    for (const auto& [name, replica] : replicas_) {
      ASSERT_TRUE(WaitFor([&] { return replica->Ready(); }, seconds(240)))
          << name << " did not get ready";
    }
  }

  // Whatever the test left: the session containers outlive their servers by design.
  void TearDown() override {
    if (HasFailure() && balancer_) std::printf("haproxy's log:\n%s\n", balancer_->log().c_str());
    balancer_.reset();
    replicas_.clear();
    for (const auto& [name, instance] : instances_) {
      (void)service::RemoveLeftovers(Engine::Get().engine(), instance, nullptr);
      docker::ListOptions all;
      all.all = true;
      all.filters = {{"label", {std::string(runner::kInstanceLabel) + "=" + instance}}};
      std::size_t left = 0;
      EXPECT_TRUE(WaitFor(
          [&] {
            auto found = Engine::Get().client().ListContainers(all);
            left = found.ok() ? found->size() : 1;
            return left == 0;
          },
          seconds(60)))
          << left << " container(s) of " << name << " left behind";
    }
    std::remove(key_file_.c_str());
  }

  void StartReplica(const std::string& name) {
    // SANDBOX_MCP_BIN is the conformance test server here: its fixture tools include the
    // requestState round-trip tool (tests/integration/balancer/CMakeLists.txt).
    replicas_[name] = std::make_unique<sandbox::testing::ServerProcess>(
        instances_[name], ports_[name], ReplicaConfig(name, key_file_));
  }

  int lb() const { return balancer_->port(); }

  std::string key_file_;
  std::map<std::string, std::string> instances_;
  std::map<std::string, int> ports_;
  std::map<std::string, std::unique_ptr<sandbox::testing::ServerProcess>> replicas_;
  std::unique_ptr<Balancer> balancer_;
};

TEST_F(BalancerTest, StateReachesItsReplicaAndAKilledReplicasIdsAnswerReplicaDown) {
  const Steps step;
  step("both replicas ready");
  // Both replicas join once their /readyz has passed twice: stateless runs then reach both.
  std::set<std::string> served;
  ASSERT_TRUE(WaitFor(
      [&] {
        const Answer run = Execute(lb(), "print(6 * 7)");
        if (run.status == 200 && run.Json().value("stdout", "") == "42\n")
          served.insert(run.replica);
        return served.size() == 2;
      },
      seconds(120)))
      << "stateless runs reached only: " << served.size() << " replica(s)";

  // ---- MCP sessions (Streamable HTTP): two calls each, on the replica the id names ----
  step("MCP sessions");
  auto mcp = OneOnEach([&] {
    const Answer init = McpInitialize(lb());
    EXPECT_EQ(init.status, 200) << Describe(init);
    return std::make_pair(init.replica, init.session_header);
  });
  for (const auto& [replica, session] : mcp) {
    for (int call = 2; call <= 3; ++call) {
      const Answer a = McpRun(lb(), session, call, "print(" + std::to_string(call) + " * 10)");
      ASSERT_EQ(a.status, 200) << Describe(a);
      EXPECT_EQ(a.replica, replica) << "call " << call << " of an MCP session of " << replica;
      const json result = RpcMessage(a, call)["result"];
      EXPECT_EQ(result["structuredContent"].value("stdout", ""), std::to_string(call * 10) + "\n")
          << a.body.substr(0, 600);
    }
  }

  // ---- legacy HTTP+SSE sessions: the stream's replica mints the id, its messages go there ----
  step("legacy SSE sessions");
  std::map<std::string, std::unique_ptr<LegacyStream>> streams;
  for (int i = 0; i < 8 && streams.size() < 2; ++i) {
    auto stream = std::make_unique<LegacyStream>(lb());
    ASSERT_FALSE(stream->session().empty()) << stream->received();
    EXPECT_EQ(PrefixOf(stream->session()), stream->replica()) << stream->received();
    if (streams.count(stream->replica()) == 0) streams[stream->replica()] = std::move(stream);
  }
  ASSERT_TRUE(streams.count("r1") == 1 && streams.count("r2") == 1) << streams.size();
  for (const auto& [replica, stream] : streams) {
    const Answer a = LegacyPing(lb(), stream->session(), "ping-" + replica);
    EXPECT_EQ(a.status, 202) << Describe(a);
    EXPECT_EQ(a.replica, replica);
    EXPECT_TRUE(stream->ReadUntil("\"ping-" + replica + "\"")) << stream->received();
  }

  // ---- sandbox sessions: created balanced, then upload, run, download on their replica ----
  step("sandbox sessions");
  auto sessions = OneOnEach(
      [&] {
        const Answer created = Of(To(lb()).Post("/v1/sessions", "{}", "application/json"));
        EXPECT_EQ(created.status, 201) << Describe(created);
        return std::make_pair(created.replica, created.Json().value("session_id", ""));
      },
      [&](const std::string& id) { To(lb()).Delete(("/v1/sessions/" + id).c_str()); });
  for (const auto& [replica, id] : sessions) {
    const std::string files = "/v1/sessions/" + id + "/files/";
    const Answer put = Of(To(lb()).Put((files + "in.txt").c_str(), "seven", "text/plain"));
    EXPECT_EQ(put.status, 200) << Describe(put);
    EXPECT_EQ(put.replica, replica);
    const Answer run = Execute(
        lb(), "x = open('in.txt').read()\nopen('out.txt', 'w').write(x.upper())\nprint(len(x))",
        id);
    ASSERT_EQ(run.status, 200) << Describe(run);
    EXPECT_EQ(run.replica, replica) << "a run naming the session in its body";
    EXPECT_EQ(run.Json().value("stdout", ""), "5\n") << run.body;
    const Answer got = Of(To(lb()).Get((files + "out.txt").c_str()));
    EXPECT_EQ(got.status, 200) << Describe(got);
    EXPECT_EQ(got.replica, replica);
    EXPECT_EQ(got.body, "SEVEN");
    // The same session through 2026-07-28 MCP: a tools/call naming it in its arguments, and
    // its file read as a resource (the URI travels in Mcp-Name).
    const Answer call = Modern(lb(), "tools/call", "run_python",
                               {{"name", "run_python"},
                                {"arguments", {{"code", "print(x * 2)"}, {"session_id", id}}},
                                {"_meta", Meta()}});
    ASSERT_EQ(call.status, 200) << Describe(call);
    EXPECT_EQ(call.replica, replica) << "a tools/call naming the session in its arguments";
    EXPECT_EQ(RpcMessage(call, 7)["result"]["structuredContent"].value("stdout", ""),
              "sevenseven\n")
        << call.body.substr(0, 600);
    const std::string uri = "sandbox://sessions/" + id + "/files/out.txt";
    const Answer read = Modern(lb(), "resources/read", uri, {{"uri", uri}, {"_meta", Meta()}});
    ASSERT_EQ(read.status, 200) << Describe(read);
    EXPECT_EQ(read.replica, replica);
    EXPECT_EQ(RpcMessage(read, 7)["result"]["contents"][0].value("text", ""), "SEVEN") << read.body;
  }

  // ---- tasks: created balanced, polled until done on their replica ----
  step("tasks");
  auto tasks = OneOnEach([&] {
    const Answer created = Modern(lb(), "tools/call", "run_python",
                                  {{"name", "run_python"},
                                   {"arguments", {{"code", "print('task done')"}}},
                                   {"_meta", Meta(TasksCapability())}});
    EXPECT_EQ(created.status, 200) << Describe(created);
    const json result = RpcMessage(created, 7)["result"];
    EXPECT_EQ(result.value("resultType", ""), "task") << created.body.substr(0, 600);
    return std::make_pair(created.replica, result.value("taskId", ""));
  });
  for (const auto& [replica, task] : tasks) {
    json status;
    EXPECT_TRUE(WaitFor(
        [&] {
          const Answer got = TaskGet(lb(), task);
          EXPECT_EQ(got.replica, replica) << Describe(got);
          status = RpcMessage(got, 7)["result"];
          return status.value("status", "") != "working";
        },
        seconds(120)));
    EXPECT_EQ(status.value("status", ""), "completed") << status.dump().substr(0, 600);
    EXPECT_EQ(status["result"]["structuredContent"].value("stdout", ""), "task done\n");
  }

  // ---- a multi round-trip whose rounds reach different replicas: one key file ----
  step("requestState across replicas");
  const char* tool = "test_input_required_result_request_state";
  const json caps = {{"elicitation", json::object()}};
  const Answer round1 =
      Modern(ports_["r1"], "tools/call", tool, {{"name", tool}, {"_meta", Meta(caps)}});
  const json state = RpcMessage(round1, 7)["result"]["requestState"];
  ASSERT_TRUE(state.is_string()) << Describe(round1);
  const json answers = {{"confirm", {{"action", "accept"}, {"content", {{"ok", true}}}}}};
  const Answer round2 = Modern(ports_["r2"], "tools/call", tool,
                               {{"name", tool},
                                {"inputResponses", answers},
                                {"requestState", state},
                                {"_meta", Meta(caps)}});
  EXPECT_EQ(RpcMessage(round2, 7)["result"].value("resultType", ""), "complete")
      << "r2 did not open r1's requestState: " << Describe(round2);

  // ---- an id of another replica, sent to a replica directly, is an unknown id there ----
  step("ids of another replica");
  const Answer foreign_session =
      Of(To(ports_["r1"]).Get(("/v1/sessions/" + sessions["r2"]).c_str()));
  EXPECT_EQ(foreign_session.status, 404) << Describe(foreign_session);
  EXPECT_EQ(foreign_session.Json().value("error", "").empty(), false) << foreign_session.body;
  const Answer foreign_mcp = McpRun(ports_["r1"], mcp["r2"], 9, "print(1)");
  EXPECT_EQ(foreign_mcp.status, 404) << Describe(foreign_mcp);
  const Answer foreign_task = TaskGet(ports_["r1"], tasks["r2"]);
  EXPECT_TRUE(RpcMessage(foreign_task, 7).contains("error")) << Describe(foreign_task);

  // ---- r2 is killed ----
  step("r2 killed");
  replicas_["r2"]->Stop(SIGKILL);
  Answer down;
  EXPECT_TRUE(WaitFor(
      [&] {
        down = Of(To(lb()).Get(("/v1/sessions/" + sessions["r2"]).c_str()));
        return down.status == 503;
      },
      seconds(60)))
      << Describe(down);
  ExpectReplicaDown(down, "GET /v1/sessions/<r2's session>");
  ExpectReplicaDown(Execute(lb(), "print(x)", sessions["r2"]), "a run in r2's session");
  ExpectReplicaDown(McpRun(lb(), mcp["r2"], 4, "print(1)"), "a call in r2's MCP session");
  ExpectReplicaDown(TaskGet(lb(), tasks["r2"]), "tasks/get of r2's task");
  ExpectReplicaDown(LegacyPing(lb(), streams["r2"]->session(), "late"), "r2's legacy session");
  const std::string r2_uri = "sandbox://sessions/" + sessions["r2"] + "/files/out.txt";
  ExpectReplicaDown(Modern(lb(), "resources/read", r2_uri, {{"uri", r2_uri}, {"_meta", Meta()}}),
                    "a file of r2's session");

  // r1's keep working, and new work goes to r1.
  step("r2's ids answered replica_down");
  const Answer r1_run = Execute(lb(), "print(x)", sessions["r1"]);
  EXPECT_EQ(r1_run.status, 200) << Describe(r1_run);
  EXPECT_EQ(r1_run.Json().value("stdout", ""), "seven\n");
  const Answer r1_call = McpRun(lb(), mcp["r1"], 5, "print('still here')");
  EXPECT_EQ(r1_call.status, 200) << Describe(r1_call);
  EXPECT_EQ(TaskGet(lb(), tasks["r1"]).status, 200);
  EXPECT_EQ(LegacyPing(lb(), streams["r1"]->session(), "again").status, 202);
  for (int i = 0; i < 4; ++i) {
    const Answer run = Execute(lb(), "print(6 * 7)");
    EXPECT_EQ(run.status, 200) << Describe(run);
    EXPECT_EQ(run.replica, "r1");
    EXPECT_EQ(run.Json().value("stdout", ""), "42\n") << run.body;
  }

  // ---- r2 started again adopts its sandbox session (its id names r2, the record covers it) ----
  step("r2 started again");
  StartReplica("r2");
  Answer back;
  EXPECT_TRUE(WaitFor(
      [&] {
        back = Execute(lb(), "print(x)", sessions["r2"]);
        return back.status == 200;
      },
      seconds(240)))
      << Describe(back);
  EXPECT_EQ(back.replica, "r2");
  EXPECT_EQ(back.Json().value("stdout", ""), "seven\n") << back.body;
  // What lived in r2's memory is gone, each answered by r2 as an unknown id.
  EXPECT_EQ(McpRun(lb(), mcp["r2"], 6, "print(1)").status, 404);
  const Answer old_task = TaskGet(lb(), tasks["r2"]);
  EXPECT_EQ(old_task.replica, "r2");
  EXPECT_TRUE(RpcMessage(old_task, 7).contains("error")) << Describe(old_task);
  step("done");
}

}  // namespace
}  // namespace sandbox
