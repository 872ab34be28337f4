// Issue 34's first findings against the server binary and the real engine: figures without a
// byte bound (a 4096x4096 noise figure with output_bytes 1024 was a 77.6 MB answer) and output
// amplified on the way out (16 MiB of control bytes became a 192 MiB MCP answer). Each case
// asserts the answer's size within its stated bound (docs/memory-budget.md) and the server's
// peak resident memory (VmHWM of /proc/<pid>/status) within the formula's budget: its resident
// memory before, plus memory.inflight_bytes, plus what runs in progress hold of their results.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "integration/server/server_process.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using json = nlohmann::json;
using sandbox::testing::FreePort;
using sandbox::testing::ServerProcess;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

constexpr std::int64_t kMiB = 1 << 20;
constexpr std::int64_t kInflight = 256 * kMiB;  // memory.inflight_bytes of these servers
// What a run in progress holds of its result, at the most (the formula's second term):
// output_bytes (16 MiB here), output.max_figures_bytes and output.max_files_bytes (16 MiB each
// by default); max_total 2 runs at once.
constexpr std::int64_t kRunsInProgress = 2 * (16 + 16 + 16) * kMiB;
// The allocator's and the process's own growth under load (threads, arenas, buffers).
constexpr std::int64_t kSlack = 64 * kMiB;

// A 4096x4096 figure of noise (the pixel bound): its PNG is ~50 MB. The pool's runs get 1.5 GiB
// of memory to draw sixteen.
std::string NoiseFigures(int count) {
  return "import numpy as np, matplotlib.pyplot as plt\n"
         "img = np.random.default_rng(1).integers(0, 256, (4096, 4096, 3), dtype=np.uint8)\n"
         "for _ in range(" +
         std::to_string(count) +
         "):\n"
         "    plt.figure(figsize=(40.96, 40.96), dpi=100).figimage(img)\n"
         "    plt.show()\n"  // one open at a time: sixteen at once do not fit the run's memory
         "print('drawn')\n";
}

// 16 MiB of control bytes: each escapes to six characters in JSON.
const char* kControlBytes = "import os\nos.write(1, b'\\x01' * (16 << 20))\n";

std::int64_t StatusKb(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}
std::int64_t RssBytes(pid_t pid) { return StatusKb(pid, "VmRSS") * 1024; }
std::int64_t PeakRssBytes(pid_t pid) { return StatusKb(pid, "VmHWM") * 1024; }

// One value of /metrics, -1 when absent.
double Metric(int port, const std::string& name) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  if (!res) return -1;
  std::istringstream lines(res->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

httplib::Result Execute(int port, const json& body) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(300, 0);
  return client.Post("/v1/execute", body.dump(), "application/json");
}

// A tools/call of run_python over Streamable HTTP (a legacy session): the SSE answer's body.
std::string McpRunPython(int port, const json& arguments) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(300, 0);
  httplib::Headers headers = {{"Accept", "application/json, text/event-stream"}};
  auto init = client.Post("/mcp", headers, R"({"jsonrpc":"2.0","id":1,"method":"initialize",
      "params":{"protocolVersion":"2025-11-25","capabilities":{},
      "clientInfo":{"name":"answers-test","version":"1"}}})",
                          "application/json");
  if (!init || init->status != 200) return {};
  headers = {{"Accept", "application/json, text/event-stream"},
             {"Mcp-Session-Id", init->get_header_value("Mcp-Session-Id")},
             {"MCP-Protocol-Version", "2025-11-25"}};
  auto call = client.Post("/mcp", headers,
                          json{{"jsonrpc", "2.0"},
                               {"id", 2},
                               {"method", "tools/call"},
                               {"params", {{"name", "run_python"}, {"arguments", arguments}}}}
                              .dump(),
                          "application/json");
  return call ? call->body : std::string();
}

// The JSON-RPC message of an SSE answer's `message` event.
json SseMessage(const std::string& body) {
  const std::string key = "event: message\ndata: ";
  auto at = body.find(key);
  if (at == std::string::npos) return json();
  at += key.size();
  return json::parse(body.substr(at, body.find('\n', at) - at), nullptr, false);
}

class AnswersTest : public ::testing::Test {
 protected:
  void Start(std::int64_t inflight, int wait_ms) {
    const auto instance = sandbox::testing::TestInstanceId("answers");
    server_ = std::make_unique<ServerProcess>(
        instance, FreePort(),
        R"("memory": {"inflight_bytes": )" + std::to_string(inflight) +
            R"(, "inflight_wait_ms": )" + std::to_string(wait_ms) +
            R"(}, "pools": [{"name": "default", "min_idle": 1, "max_total": 2, )"
            R"("acquire_timeout_ms": 120000, "limits": {"memory_bytes": 1610612736}}])");
    ASSERT_TRUE(WaitFor([&] { return server_->Ready(/*idle=*/1); }, seconds(180)));
    // One ordinary run first: the baseline is the server at work, not the server at rest.
    auto warm = Execute(server_->port(), {{"code", "print('warm')"}});
    ASSERT_TRUE(warm && warm->status == 200);
    baseline_ = RssBytes(server_->pid());
    ASSERT_GT(baseline_, 0);
  }

  // The formula: the resident memory before, plus the budget, the runs' results and slack.
  void ExpectPeakWithin(std::int64_t inflight) const {
    const std::int64_t peak = PeakRssBytes(server_->pid());
    std::cout << "server RSS: " << baseline_ / kMiB << " MiB before, peak " << peak / kMiB
              << " MiB; budget " << inflight / kMiB << " MiB\n";
    EXPECT_LE(peak, baseline_ + inflight + kRunsInProgress + kSlack)
        << "peak " << peak / kMiB << " MiB, baseline " << baseline_ / kMiB << " MiB";
  }

  std::unique_ptr<ServerProcess> server_;
  std::int64_t baseline_ = 0;
};

TEST_F(AnswersTest, NoiseFiguresAreDroppedAtTheirByteBound) {
  Start(kInflight, 5000);
  for (int count : {1, 8, 16}) {
    SCOPED_TRACE("figures: " + std::to_string(count));
    auto res = Execute(server_->port(),
                       {{"code", NoiseFigures(count)}, {"output_bytes", 1024}, {"timeout_s", 240}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body.substr(0, 500);
    // Every figure is over output.max_figure_bytes (4 MiB): none comes back, and the answer
    // says so. Before: 77.6 MB for one, 297 MiB for eight.
    EXPECT_LT(res->body.size(), static_cast<std::size_t>(64 << 10));
    auto body = json::parse(res->body);
    EXPECT_EQ(body["verdict"], "ok") << body["stderr"];
    EXPECT_EQ(body["stdout"], "drawn\n");
    EXPECT_TRUE(body["images"].empty());
    EXPECT_EQ(body["images_truncated"], true);
  }
  // The same through MCP: no image block, images_truncated in structuredContent.
  auto message = SseMessage(
      McpRunPython(server_->port(), {{"code", NoiseFigures(1)}, {"output_bytes", 1024}}));
  ASSERT_TRUE(message.is_object());
  const json& result = message["result"];
  EXPECT_EQ(result["structuredContent"]["images_truncated"], true);
  EXPECT_EQ(result["content"].size(), 1U);  // the text block only
  ExpectPeakWithin(kInflight);
}

TEST_F(AnswersTest, ControlBytesReachTheClientWithinTwiceTheOutputLimit) {
  Start(kInflight, 5000);
  const std::size_t bound = 2 * (16 << 20) + 4096;  // 2 x output_bytes + slack, escaped
  auto res = Execute(server_->port(), {{"code", kControlBytes}, {"output_bytes", 16 * kMiB}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body.substr(0, 500);
  EXPECT_LE(res->body.size(), bound + (64 << 10));  // was ~96 MiB
  auto body = json::parse(res->body);
  EXPECT_EQ(body["output_truncated"], true);

  const std::string answer =
      McpRunPython(server_->port(), {{"code", kControlBytes}, {"output_bytes", 16 * kMiB}});
  // The output once in full plus the text block's bounded repeat; was 192 MiB.
  EXPECT_LE(answer.size(), bound + 2 * (64 << 10) + (64 << 10));
  auto message = SseMessage(answer);
  ASSERT_TRUE(message.is_object());
  EXPECT_EQ(message["result"]["structuredContent"]["output_truncated"], true);
  ExpectPeakWithin(kInflight);
}

TEST_F(AnswersTest, ConcurrentLargeAnswersStayWithinASmallBudget) {
  constexpr std::int64_t kSmall = 64 * kMiB;  // the smallest budget allowed
  Start(kSmall, 200);
  // One answer larger than the whole budget (three copies of ~32 MiB): refused clearly.
  auto too_big = Execute(server_->port(), {{"code", kControlBytes}, {"output_bytes", 16 * kMiB}});
  ASSERT_TRUE(too_big);
  EXPECT_EQ(too_big->status, 503);
  EXPECT_NE(too_big->body.find("memory.inflight_bytes"), std::string::npos) << too_big->body;

  // Four at once of ~12 MiB each (three copies: ~36 MiB): one fits at a time; the others wait
  // for it or are refused, each answer whole or a clear refusal.
  const json plain = {{"code", "import sys\nsys.stdout.write('a' * (12 << 20))"},
                      {"output_bytes", 16 * kMiB}};
  std::vector<std::future<httplib::Result>> calls;
  for (int i = 0; i < 4; ++i) {
    calls.push_back(
        std::async(std::launch::async, [&] { return Execute(server_->port(), plain); }));
  }
  int whole = 0;
  for (auto& call : calls) {
    auto res = call.get();
    ASSERT_TRUE(res);
    if (res->status == 200) {
      EXPECT_EQ(json::parse(res->body)["stdout"].get<std::string>().size(), 12U << 20);
      ++whole;
    } else {
      EXPECT_EQ(res->status, 503) << res->body.substr(0, 300);
      EXPECT_NE(res->body.find("memory.inflight_bytes"), std::string::npos) << res->body;
    }
  }
  EXPECT_GE(whole, 1);
  EXPECT_GE(Metric(server_->port(), "sandbox_inflight_refused_total"), 1);
  EXPECT_LE(Metric(server_->port(), "sandbox_inflight_peak_bytes"), static_cast<double>(kSmall));
  EXPECT_EQ(Metric(server_->port(), "sandbox_inflight_capacity_bytes"),
            static_cast<double>(kSmall));
  // Every reservation is given back once its answer is written.
  EXPECT_TRUE(
      WaitFor([&] { return Metric(server_->port(), "sandbox_inflight_bytes") == 0; }, seconds(30)));
  ExpectPeakWithin(kSmall);
}

}  // namespace
}  // namespace sandbox
