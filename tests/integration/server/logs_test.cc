// Logs an operator can use, from a real server: every line written while serving a request
// names it (the X-Request-Id the answer carries), in text and JSON formats, also for MCP calls
// that run on a thread of their own; and one audit line per run without the code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "integration/server/server_process.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using json = nlohmann::json;
using sandbox::testing::FreePort;
using sandbox::testing::ProcessOptions;
using sandbox::testing::ServerProcess;
using sandbox::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr const char* kConfig =
    R"("sessions": {"warm": 0}, "pools": [{"name": "default", "min_idle": 1, "max_total": 2}])";

std::vector<std::string> LogLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of `path` that contain `needle`, once at least one does (bounded wait: the audit
// line is written after the answer).
std::vector<std::string> WaitForLines(const std::string& path, const std::string& needle) {
  std::vector<std::string> found;
  WaitFor(
      [&] {
        found.clear();
        for (auto& line : LogLines(path)) {
          if (line.find(needle) != std::string::npos) found.push_back(line);
        }
        return !found.empty();
      },
      30s);
  return found;
}

httplib::Result Execute(int port, const std::string& request_id, const std::string& code) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  return client.Post("/v1/execute", {{"X-Request-Id", request_id}}, json{{"code", code}}.dump(),
                     "application/json");
}

class LogsTest : public ::testing::Test {
 protected:
  std::unique_ptr<ServerProcess> Start(const std::string& suite, const std::string& format) {
    log_path_ = ::testing::TempDir() + "/logs-" + suite + ".log";
    ProcessOptions options;
    options.log_level = "info";
    options.extra_args = {"--log-format", format};
    options.stderr_path = log_path_;
    port_ = FreePort();
    auto server = std::make_unique<ServerProcess>(sandbox::testing::TestInstanceId(suite), port_,
                                                  kConfig, options);
    EXPECT_TRUE(WaitFor([&] { return server->Ready(1); }, 240s)) << "the server did not start";
    return server;
  }
  std::string log_path_;
  int port_ = 0;
};

TEST_F(LogsTest, TextLinesOfARequestNameItAndEachRunHasOneAuditLine) {
  auto server = Start("logs-text", "text");
  auto res = Execute(port_, "audit-text-1", "print('hidden-code-marker')");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("X-Request-Id"), "audit-text-1");
  auto audit = WaitForLines(log_path_, "[audit]");
  ASSERT_EQ(audit.size(), 1U);
  EXPECT_THAT(audit[0], HasSubstr("[info] [req audit-text-1] run principal=local kind=oneshot "
                                  "pool=default mode=recycle verdict=ok exit_code=0 "));
  EXPECT_TRUE(std::regex_search(audit[0], std::regex(" sandbox=[0-9a-f]{12} session=-$")))
      << audit[0];
  EXPECT_TRUE(std::regex_search(audit[0], std::regex(" stdout_bytes=19 "))) << audit[0];
  // No line holds the code; lines of no request (start-up) carry no request id.
  for (const auto& line : LogLines(log_path_)) {
    EXPECT_THAT(line, Not(HasSubstr("hidden-code-marker")));
  }
  EXPECT_THAT(LogLines(log_path_).front(), Not(HasSubstr("[req ")));
  // A request without an id of its own gets a fresh one, in its answer and its lines alike.
  auto second = Execute(port_, "not a usable id!", "1");
  ASSERT_TRUE(second);
  const std::string id = second->get_header_value("X-Request-Id");
  ASSERT_EQ(id.size(), 16U);
  EXPECT_EQ(WaitForLines(log_path_, "[req " + id + "] run principal=").size(), 1U);
}

TEST_F(LogsTest, JsonLinesCarryTheRequestIdAlsoForMcpCalls) {
  auto server = Start("logs-json", "json");
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(120, 0);
  httplib::Headers headers = {{"Accept", "application/json, text/event-stream"},
                              {"X-Request-Id", "mcp-init-1"}};
  auto init = client.Post("/mcp", headers, R"({"jsonrpc":"2.0","id":1,"method":"initialize",
      "params":{"protocolVersion":"2025-11-25","capabilities":{},
      "clientInfo":{"name":"logs-test","version":"1"}}})",
                          "application/json");
  ASSERT_TRUE(init && init->status == 200);
  headers = {{"Accept", "application/json, text/event-stream"},
             {"Mcp-Session-Id", init->get_header_value("Mcp-Session-Id")},
             {"MCP-Protocol-Version", "2025-11-25"},
             {"X-Request-Id", "mcp-call-1"}};
  auto call = client.Post(
      "/mcp", headers,
      json{{"jsonrpc", "2.0"},
           {"id", 2},
           {"method", "tools/call"},
           {"params", {{"name", "run_python"}, {"arguments", {{"code", "print(6 * 7)"}}}}}}
          .dump(),
      "application/json");
  ASSERT_TRUE(call);
  ASSERT_EQ(call->status, 200) << call->body;
  EXPECT_THAT(call->body, HasSubstr("42"));
  auto audit = WaitForLines(log_path_, "\"logger\":\"audit\"");
  ASSERT_EQ(audit.size(), 1U);
  json line = json::parse(audit[0]);
  EXPECT_EQ(line["request_id"], "mcp-call-1") << audit[0];
  EXPECT_THAT(line["msg"].get<std::string>(), HasSubstr("run principal=local kind=oneshot "));
  EXPECT_THAT(line["msg"].get<std::string>(), HasSubstr(" verdict=ok "));
  // Every line is one JSON object.
  for (const auto& text : LogLines(log_path_)) {
    EXPECT_FALSE(json::parse(text, nullptr, false).is_discarded()) << text;
  }
}

}  // namespace
}  // namespace sandbox
