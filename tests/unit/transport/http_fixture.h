// The fixture of the HTTP transport tests: Streamable HTTP and legacy SSE on a real httplib
// server on 127.0.0.1 (port 0), driven by httplib::Client, over a FakeService.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/http/request_guard.h"
#include "sandbox/http/server_setup.h"
#include "sandbox/transport/legacy_sse_transport.h"
#include "sandbox/transport/streamable_http_transport.h"
#include "unit/mcp/test_util.h"

namespace sandbox::transport::testing {

using json = nlohmann::json;
using http::GuardOptions;
using http::RequestGuard;
using mcp::testing::InitializeRequest;
using mcp::testing::Notification;
using mcp::testing::Request;
using sandbox::testing::FakeService;

constexpr const char* kAccept = "application/json, text/event-stream";

struct SseEvent {
  std::string event;
  json data;
};

// Parses a complete SSE body (comments ignored).
inline std::vector<SseEvent> ParseSse(const std::string& body) {
  std::vector<SseEvent> events;
  std::size_t pos = 0;
  while (pos < body.size()) {
    auto end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string block = body.substr(pos, end - pos);
    pos = end + 2;
    SseEvent event;
    std::string data;
    std::size_t line_start = 0;
    while (line_start <= block.size()) {
      auto nl = block.find('\n', line_start);
      std::string line = block.substr(line_start, nl - line_start);
      if (line.rfind("event: ", 0) == 0) event.event = line.substr(7);
      if (line.rfind("data: ", 0) == 0) data += line.substr(6);
      if (nl == std::string::npos) break;
      line_start = nl + 1;
    }
    if (event.event.empty() && data.empty()) continue;  // a comment
    event.data = data.empty() || data[0] != '{' ? json(data) : json::parse(data);
    events.push_back(event);
  }
  return events;
}

class HttpTransportTest : public ::testing::Test {
 protected:
  void Start(GuardOptions guard_options = {}) {
    guard_ = std::make_unique<RequestGuard>(std::move(guard_options));
    http::HttpServerOptions options;
    options.threads = threads_;
    options.stream_workers = stream_workers_;
    options.max_body_bytes = 64 << 10;
    http::ConfigureHttpServer(server_, options, *guard_);
    HttpTransportOptions http;
    http.sse.poll = std::chrono::milliseconds(50);
    http.principal = guard_->Resolver();
    http.stream_slots = slots_;
    StreamableHttpOptions streamable_options;
    streamable_options.http = http;
    streamable_options.http.max_body_bytes = 64 << 10;
    streamable_options.sessions.max_sessions_per_principal = sessions_per_principal_;
    streamable_ = std::make_unique<StreamableHttpTransport>(dispatcher_, streamable_options,
                                                            mcp::testing::NullLogger());
    streamable_->Register(server_, "/mcp");
    LegacySseOptions legacy_options;
    legacy_options.http = http;
    legacy_ = std::make_unique<LegacySseTransport>(dispatcher_, legacy_options,
                                                   mcp::testing::NullLogger());
    legacy_->Register(server_, "/sse", "/messages");
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      listen_returned_.store(true);
    });
  }
  void TearDown() override {
    if (streamable_) streamable_->Shutdown();
    if (legacy_) legacy_->Shutdown();
    http::StopListening(server_, listen_returned_);  // not lost if the listen has not begun
    if (thread_.joinable()) thread_.join();
  }
  httplib::Client Client() {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(30, 0);
    return client;
  }
  httplib::Result Post(const json& body, httplib::Headers headers = {}) {
    if (headers.find("Accept") == headers.end()) headers.emplace("Accept", kAccept);
    if (!session_.empty() && headers.find("Mcp-Session-Id") == headers.end()) {
      headers.emplace("Mcp-Session-Id", session_);
    }
    return Client().Post("/mcp", headers, body.dump(), "application/json");
  }
  void Initialize() {
    auto res = Post(InitializeRequest());
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    session_ = res->get_header_value("Mcp-Session-Id");
    ASSERT_EQ(Post(Notification("notifications/initialized"))->status, 202);
  }

  // An MCP session with a bearer token; returns its Mcp-Session-Id.
  std::string InitializeAs(const std::string& token) {
    auto res = Post(InitializeRequest(), {{"Authorization", "Bearer " + token}});
    EXPECT_TRUE(res && res->status == 200);
    return res ? res->get_header_value("Mcp-Session-Id") : "";
  }
  // A tools/call answered as an SSE stream: the final message.
  json CallAs(const std::string& token, const std::string& session, const json& call) {
    auto res = Post(call, {{"Authorization", "Bearer " + token}, {"Mcp-Session-Id", session}});
    EXPECT_TRUE(res && res->status == 200);
    if (!res) return json();
    auto events = ParseSse(res->body);
    return events.empty() ? json() : events.back().data;
  }

  // Set before Start(): the stream limit shared by both transports (none by default) and the
  // server's workers.
  std::shared_ptr<SlotLimiter> slots_;
  std::size_t sessions_per_principal_ = 1000;
  int threads_ = 16;
  int stream_workers_ = 0;
  FakeService service_;
  sandbox::testing::FakeSessionService sessions_;
  mcp::Dispatcher dispatcher_ = mcp::testing::MakeSessionDispatcher(service_, sessions_);
  std::unique_ptr<RequestGuard> guard_;
  httplib::Server server_;
  std::unique_ptr<StreamableHttpTransport> streamable_;
  std::unique_ptr<LegacySseTransport> legacy_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  std::string session_;
};

}  // namespace sandbox::transport::testing
