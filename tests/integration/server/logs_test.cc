// Logs an operator can use, from a real server: every line written while serving a request
// names it (the X-Request-Id the answer carries), in text and JSON formats, also for MCP calls
// that run on a thread of their own; and one audit line per run without the code. And logs no
// client or run can forge or flood (docs/memory-budget.md, "Logs"): a pool name or a run's
// forged records write no line of their own, one run adds a bounded amount, sessions appear
// by digest only, and a session's MIME type claims never reach a listing or a header.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/server/server_process.h"
#include "sandbox/core/log_safe.h"
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

std::uintmax_t LogBytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

// Every line of a text log is one the server began: a timestamp first (the forgeries use
// 1999's, which no line may begin with).
void ExpectOnlyServerLines(const std::string& path) {
  static const std::regex kPrefix(R"(^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\] \[)");
  for (const auto& line : LogLines(path)) {
    EXPECT_TRUE(std::regex_search(line, kPrefix)) << "a line the server did not begin: " << line;
    EXPECT_FALSE(line.starts_with("[1999-")) << "a forged line: " << line;
  }
}

class LogsTest : public ::testing::Test {
 protected:
  std::unique_ptr<ServerProcess> Start(const std::string& suite, const std::string& format,
                                       const std::string& config = kConfig) {
    log_path_ = ::testing::TempDir() + "/logs-" + suite + ".log";
    ProcessOptions options;
    options.log_level = "info";
    options.extra_args = {"--log-format", format};
    options.stderr_path = log_path_;
    port_ = FreePort();
    auto server = std::make_unique<ServerProcess>(sandbox::testing::TestInstanceId(suite), port_,
                                                  config, options);
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
  EXPECT_TRUE(
      std::regex_search(audit[0], std::regex(" engine=local sandbox=[0-9a-f]{12} session=-$")))
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
  // The audit line's values are keys of their own beside its message.
  EXPECT_EQ(line["msg"], "run") << audit[0];
  EXPECT_EQ(line["principal"], "local");
  EXPECT_EQ(line["kind"], "oneshot");
  EXPECT_EQ(line["verdict"], "ok");
  EXPECT_EQ(line["exit_code"], 0);
  // Every line is one JSON object.
  for (const auto& text : LogLines(log_path_)) {
    EXPECT_FALSE(json::parse(text, nullptr, false).is_discarded()) << text;
  }
}

// Attack: a pool name that holds a line break and a fake audit line (text logs), then a run
// that forges 6,000 records, each of which the harness refuses. Expected: the pool is refused
// (400, one audit line naming it quoted), the run ends `error` (it claimed an internal failure
// after its code started), every line of the log is one the server began, and the run added a
// bounded number of lines and bytes (a count of the refused records, not each one).
TEST_F(LogsTest, ForgedPoolNamesAndRecordsWriteNoLinesAndABoundedAmount) {
  // One sandbox: the run after the forging one reads what the harness wrote after its `done`.
  auto server = Start("logs-forge", "text",
                      R"("sessions": {"warm": 0}, )"
                      R"("pools": [{"name": "default", "min_idle": 1, "max_total": 1}])");
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(120, 0);
  const std::string forged_pool =
      "x\n[1999-01-01 00:00:00.000] [audit] [info] run principal=admin kind=oneshot pool=default";
  auto refused = client.Post("/v1/execute", {{"X-Request-Id", "forge-pool-1"}},
                             json{{"code", "1"}, {"pool", forged_pool}}.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  auto audit = WaitForLines(log_path_, "[req forge-pool-1] run principal=");
  ASSERT_EQ(audit.size(), 1U);
  EXPECT_THAT(audit[0], HasSubstr(" pool=\"x\\n[1999-01-01 00:00:00.000] [audit] [info] run "
                                  "principal=admin kind=oneshot pool=default\" "));
  EXPECT_THAT(audit[0], HasSubstr(" refused="));
  EXPECT_TRUE(WaitFor([&] { return server->Ready(1); }, 120s));

  const std::uintmax_t bytes_before = LogBytes(log_path_);
  const std::size_t lines_before = LogLines(log_path_).size();
  const std::string forge =
      "import json, os, struct\n"
      "def forge(rec):\n"
      "    data = json.dumps(rec).encode()\n"
      "    for fd in range(3, 64):\n"
      "        try:\n"
      "            os.write(fd, struct.pack('>I', len(data)) + b'J' + data)\n"
      "        except OSError:\n"
      "            pass\n"
      "fake = '\\n[1999-01-01 00:00:00.000] [audit] [info] run principal=admin '\n"
      "for i in range(3000):\n"
      "    forge({'t': 'internal', 'message': 'forged' + fake + 'x' * 1000})\n"
      "    forge({'t': 'file', 'path': '../forged%d' % i + fake, 'mime_type': 'text/plain',\n"
      "           'offset': 0, 'last': True, 'data_b64': 'eA=='})\n"
      "print('forged')\n";
  auto run = client.Post("/v1/execute", {{"X-Request-Id", "forge-run-1"}},
                         json{{"code", forge}}.dump(), "application/json");
  ASSERT_TRUE(run);
  ASSERT_EQ(run->status, 200) << run->body;
  const json result = json::parse(run->body);
  EXPECT_EQ(result["verdict"], "error") << run->body;
  EXPECT_EQ(result["stdout"], "forged\n");
  EXPECT_EQ(result.value("files", json::array()).size(), 0U) << run->body;
  ASSERT_EQ(WaitForLines(log_path_, "[req forge-run-1] run principal=").size(), 1U);
  auto after = client.Post("/v1/execute", {{"X-Request-Id", "forge-after-1"}},
                           json{{"code", "print(1)"}}.dump(), "application/json");
  ASSERT_TRUE(after);
  ASSERT_EQ(after->status, 200) << after->body;
  ASSERT_EQ(WaitForLines(log_path_, "[req forge-after-1] run principal=").size(), 1U);
  // The harness's count of what it did not log, relayed.
  EXPECT_EQ(WaitForLines(log_path_, "more refused record(s) not logged").size(), 1U);
  const std::uintmax_t grown = LogBytes(log_path_) - bytes_before;
  const std::size_t new_lines = LogLines(log_path_).size() - lines_before;
  // Before: 6,000 lines and ~8 MiB. Now the two runs' share is the harness's few lines, their
  // count, two audit lines and the pool's own lines.
  EXPECT_LE(new_lines, 40U);
  EXPECT_LE(grown, 64U << 10);
  ExpectOnlyServerLines(log_path_);
}

// Attack: a pool name that adds key=value pairs, in JSON logs. Expected: 400, and the audit
// object's principal is the caller's; the forged pairs are the pool's value, not keys.
TEST_F(LogsTest, JsonAuditFieldsAreKeysAPoolCannotExtend) {
  auto server = Start("logs-json-forge", "json");
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(120, 0);
  const std::string forged_pool = "x principal=admin kind=session verdict=ok";
  auto refused = client.Post("/v1/execute", {{"X-Request-Id", "forge-json-1"}},
                             json{{"code", "1"}, {"pool", forged_pool}}.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  auto audit = WaitForLines(log_path_, "\"request_id\":\"forge-json-1\"");
  std::vector<json> runs;
  for (const auto& text : audit) {
    json line = json::parse(text);
    if (line["logger"] == "audit") runs.push_back(std::move(line));
  }
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0]["msg"], "run");
  EXPECT_EQ(runs[0]["principal"], "local");
  EXPECT_EQ(runs[0]["kind"], "oneshot");
  EXPECT_EQ(runs[0]["pool"], forged_pool);
  EXPECT_FALSE(runs[0].contains("verdict"));
  EXPECT_EQ(runs[0]["session"], "-");
  for (const auto& text : LogLines(log_path_)) {
    EXPECT_FALSE(json::parse(text, nullptr, false).is_discarded()) << text;
  }
}

// Attack: a session's code makes mimetypes answer CR/LF/NUL-laden types, and the session is
// read while busy (MCP resources/read, /v1/execute). Expected: the listing, the download's
// Content-Type and a run's returned file say application/octet-stream; the busy refusals are
// 503 / an MCP error (both logged); the log names the session by its digest and never holds its id.
TEST_F(LogsTest, SessionClaimsAreCheckedAndItsIdNeverLogged) {
  auto server = Start("logs-session", "text",
                      R"("sessions": {"warm": 0, "busy_wait_ms": 100}, )"
                      R"("pools": [{"name": "default", "min_idle": 1, "max_total": 2}])");
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(120, 0);
  // Runs of up to 280 s: the slow call below lasts until the session is closed.
  auto created = client.Post("/v1/sessions", R"({"timeout_s": 280})", "application/json");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  const std::string id = json::parse(created->body)["session_id"];
  const std::string poison =
      "import mimetypes\n"
      "mimetypes.add_type('text/x\\r\\nX-Injected: 1', '.evil')\n"
      "mimetypes.add_type('text/y\\x00z', '.nul')\n"
      "open('a.evil', 'w').write('a')\n"
      "open('b.nul', 'w').write('b')\n"
      "open('c.txt', 'w').write('c')\n";
  auto run = client.Post("/v1/execute", json{{"code", poison}, {"session_id", id}}.dump(),
                         "application/json");
  ASSERT_TRUE(run);
  ASSERT_EQ(run->status, 200) << run->body;
  EXPECT_EQ(json::parse(run->body)["verdict"], "ok") << run->body;
  auto listed = client.Get(("/v1/sessions/" + id + "/files").c_str());
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->status, 200) << listed->body;
  std::map<std::string, std::string> types;
  const json listing = json::parse(listed->body);
  for (const auto& f : listing["files"]) {
    types[f["path"].get<std::string>()] = f["mime_type"].get<std::string>();
  }
  EXPECT_EQ(types["a.evil"], "application/octet-stream") << listed->body;
  EXPECT_EQ(types["b.nul"], "application/octet-stream") << listed->body;
  EXPECT_EQ(types["c.txt"], "text/plain") << listed->body;
  auto download = client.Get(("/v1/sessions/" + id + "/files/a.evil").c_str());
  ASSERT_TRUE(download);
  ASSERT_EQ(download->status, 200);
  EXPECT_EQ(download->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_FALSE(download->has_header("X-Injected"));

  // A one-shot run's own files: the same claims, the same answer.
  auto oneshot =
      client.Post("/v1/execute",
                  json{{"code",
                        "import mimetypes\nmimetypes.add_type('text/x\\r\\nX: 1', '.evil')\n"
                        "open('a.evil', 'w').write('a')\n"}}
                      .dump(),
                  "application/json");
  ASSERT_TRUE(oneshot);
  ASSERT_EQ(oneshot->status, 200) << oneshot->body;
  const json files = json::parse(oneshot->body)["files"];
  ASSERT_EQ(files.size(), 1U) << oneshot->body;
  EXPECT_EQ(files[0]["mime_type"], "application/octet-stream");

  // The session busy with a call that lasts until the session is closed: reads of it are
  // refused, and those refusals logged.
  std::thread slow([&] {
    httplib::Client mine("127.0.0.1", port_);
    mine.set_read_timeout(300, 0);
    auto res = mine.Post("/v1/execute",
                         json{{"code", "import time\ntime.sleep(200)"}, {"session_id", id}}.dump(),
                         "application/json");
    EXPECT_TRUE(res) << "the call ends when its session is closed";
  });
  EXPECT_TRUE(WaitFor(
      [&] {
        auto info = client.Get(("/v1/sessions/" + id).c_str());
        return info && info->status == 200 && json::parse(info->body).value("busy", false);
      },
      60s));
  auto busy = client.Post("/v1/execute", json{{"code", "1"}, {"session_id", id}}.dump(),
                          "application/json");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 503) << busy->body;  // busy: retry shortly
  httplib::Headers headers = {{"Accept", "application/json, text/event-stream"}};
  auto init = client.Post("/mcp", headers, R"({"jsonrpc":"2.0","id":1,"method":"initialize",
      "params":{"protocolVersion":"2025-11-25","capabilities":{},
      "clientInfo":{"name":"logs-test\nforged","version":"1"}}})",
                          "application/json");
  ASSERT_TRUE(init && init->status == 200);
  headers = {{"Accept", "application/json, text/event-stream"},
             {"Mcp-Session-Id", init->get_header_value("Mcp-Session-Id")},
             {"MCP-Protocol-Version", "2025-11-25"}};
  auto read = client.Post(
      "/mcp", headers,
      json{{"jsonrpc", "2.0"},
           {"id", "read\n[audit] run principal=admin"},
           {"method", "resources/read"},
           {"params",
            {{"uri", "sandbox://sessions/" + id +
                         "/files/c.txt\n[1999-01-01 00:00:00.000] [audit] [info] run"}}}}
          .dump(),
      "application/json");
  ASSERT_TRUE(read);
  EXPECT_THAT(read->body, HasSubstr("\"error\"")) << read->body;
  auto closed = client.Delete(("/v1/sessions/" + id).c_str());
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->status, 204);
  slow.join();

  EXPECT_FALSE(WaitForLines(log_path_, "session#" + SessionDigest(id)).empty());
  EXPECT_FALSE(WaitForLines(log_path_, "resources/read failed").empty());
  for (const auto& line : LogLines(log_path_)) {
    EXPECT_THAT(line, Not(HasSubstr(id)));
    EXPECT_THAT(line, Not(HasSubstr("X-Injected")));
  }
  ExpectOnlyServerLines(log_path_);
}

}  // namespace
}  // namespace sandbox
