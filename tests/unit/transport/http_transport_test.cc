// Streamable HTTP and legacy SSE against a real httplib server on 127.0.0.1 (port 0), driven by
// httplib::Client (and a raw socket for a dropped connection), over a FakeService.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "unit/transport/http_fixture.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;
using http::GuardOptions;
using mcp::testing::CallRunPython;
using mcp::testing::InitializeRequest;
using mcp::testing::Notification;
using mcp::testing::Request;
using sandbox::testing::FakeService;
using testing::HttpTransportTest;
using testing::kAccept;
using testing::ParseSse;

TEST_F(HttpTransportTest, InitializeSetsAnUnguessableSessionId) {
  Start();
  auto res = Post(InitializeRequest("2025-03-26"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  std::string id = res->get_header_value("Mcp-Session-Id");
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(json::parse(res->body)["result"]["protocolVersion"], "2025-03-26");
  auto other = Post(InitializeRequest());
  EXPECT_NE(other->get_header_value("Mcp-Session-Id"), id);
}

TEST_F(HttpTransportTest, StatusCodesForBadRequests) {
  Start();
  auto client = Client();
  // Accept without text/event-stream: 406.
  auto res = client.Post("/mcp", {{"Accept", "application/json"}}, InitializeRequest().dump(),
                         "application/json");
  EXPECT_EQ(res->status, 406);
  // Wrong Content-Type: 415.
  res = client.Post("/mcp", {{"Accept", kAccept}}, InitializeRequest().dump(), "text/plain");
  EXPECT_EQ(res->status, 415);
  // Unparsable: 400 with -32700.
  res = client.Post("/mcp", {{"Accept", kAccept}}, "{nope", "application/json");
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["code"], jsonrpc::rpc_code::kParseError);
  // Too large: 413.
  res = client.Post("/mcp", {{"Accept", kAccept}}, std::string(100 << 10, ' '), "application/json");
  EXPECT_EQ(res->status, 413);
  // Unsupported protocol version header: 400.
  res = Post(InitializeRequest(), {{"MCP-Protocol-Version", "1999-01-01"}});
  EXPECT_EQ(res->status, 400);
  // No session id after initialize: 400; unknown: 404 with -32001.
  res = Post(Request(1, "tools/list"));
  EXPECT_EQ(res->status, 400);
  res = Post(Request(1, "tools/list"), {{"Mcp-Session-Id", "deadbeef"}});
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(json::parse(res->body)["error"]["code"], jsonrpc::rpc_code::kSessionNotFound);
  // GET: 405 with Allow.
  res = client.Get("/mcp", {{"Accept", "text/event-stream"}});
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "POST, DELETE");
}

TEST_F(HttpTransportTest, NotificationsGet202AndRequestsJson) {
  Start();
  Initialize();
  auto res = Post(Request("a", "tools/list"), {{"MCP-Protocol-Version", "2025-11-25"}});
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  json body = json::parse(res->body);
  EXPECT_EQ(body["id"], "a");
  EXPECT_EQ(body["result"]["tools"][0]["name"], "run_python");
  // Session files as resources over HTTP too.
  res = Post(Request("r", "resources/templates/list"));
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["result"]["resourceTemplates"].size(), 1u);
  res = Post(Notification("notifications/cancelled", {{"requestId", 99}}));
  EXPECT_EQ(res->status, 202);
  EXPECT_TRUE(res->body.empty());
  // A client response (to a request the server never sent) is accepted and ignored.
  res = Post(json{{"jsonrpc", "2.0"}, {"id", 5}, {"result", json::object()}});
  EXPECT_EQ(res->status, 202);
}

TEST_F(HttpTransportTest, DeleteEndsTheSession) {
  Start();
  Initialize();
  auto client = Client();
  EXPECT_EQ(client.Delete("/mcp", {{"Mcp-Session-Id", session_}})->status, 200);
  EXPECT_EQ(Post(Request(1, "ping"))->status, 404);
  EXPECT_EQ(client.Delete("/mcp", {{"Mcp-Session-Id", session_}})->status, 404);
  auto no_session = client.Delete("/mcp");
  EXPECT_EQ(no_session->status, 405);  // 2026-07-28 has no sessions to end
  EXPECT_EQ(no_session->get_header_value("Allow"), "POST, DELETE");
  EXPECT_EQ(streamable_->session_count(), 0u);
}

TEST_F(HttpTransportTest, ToolCallStreamsProgressBeforeTheResult) {
  Start();
  Initialize();
  service_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver& observer,
                           const exec::CancelToken&) -> Result<exec::RunResult> {
    for (int i = 0; i < 5; ++i) observer.OnOutput(exec::Stream::kStdout, std::to_string(i) + "\n");
    exec::RunResult r;
    r.verdict = exec::Verdict::kOk;
    r.exit_code = 0;
    r.stdout_text = "0\n1\n2\n3\n4\n\xff";
    return r;
  });
  auto res = Post(CallRunPython(3, {{"code", "x"}}, "tok"));
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_EQ(res->get_header_value("X-Accel-Buffering"), "no");
  EXPECT_EQ(res->body.find("\nid:"), std::string::npos);
  auto events = ParseSse(res->body);
  ASSERT_GE(events.size(), 2u);
  std::string streamed;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i].event, "message");
    EXPECT_EQ(events[i].data["method"], "notifications/progress");
    streamed += events[i].data["params"]["message"].get<std::string>();
  }
  EXPECT_EQ(streamed, "0\n1\n2\n3\n4\n");
  const json& last = events.back().data;
  EXPECT_EQ(last["id"], 3);
  EXPECT_EQ(last["result"]["structuredContent"]["verdict"], "ok");
  EXPECT_EQ(last["result"]["structuredContent"]["stdout"], "0\n1\n2\n3\n4\n\xEF\xBF\xBD");
}

TEST_F(HttpTransportTest, CancelledRequestGetsNoResponse) {
  Start();
  Initialize();
  service_.SetBehaviour(service_.BlockUntilCancelled());
  std::optional<std::string> body;
  std::thread caller([&] {
    auto res = Post(CallRunPython("c1", {{"code", "x"}}, "p"));
    if (res) body = res->body;
  });
  ASSERT_TRUE(service_.WaitStarted());
  auto cancel = Post(Notification("notifications/cancelled", {{"requestId", "c1"}}));
  EXPECT_EQ(cancel->status, 202);
  caller.join();
  EXPECT_TRUE(service_.WaitForCancelled());
  ASSERT_TRUE(body);
  for (const auto& event : ParseSse(*body)) {
    EXPECT_FALSE(event.data.contains("id")) << event.data;  // notifications only, no response
  }
}

TEST_F(HttpTransportTest, DroppedConnectionCancelsTheRun) {
  Start();
  Initialize();
  service_.SetBehaviour(service_.BlockUntilCancelled());
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string body = CallRunPython(1, {{"code", "x"}}).dump();
  std::string request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: " + std::string(kAccept) +
                        "\r\nContent-Type: application/json\r\nMcp-Session-Id: " + session_ +
                        "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(service_.WaitStarted());
  close(fd);
  EXPECT_TRUE(service_.WaitForCancelled());
}

TEST_F(HttpTransportTest, HostAndOriginChecks) {
  Start();
  auto client = Client();
  auto res = client.Post(
      "/mcp",
      {{"Accept", kAccept}, {"Host", "evil.example.com"}, {"Origin", "http://evil.example.com"}},
      InitializeRequest().dump(), "application/json");
  EXPECT_EQ(res->status, 403);
  res = client.Post("/mcp", {{"Accept", kAccept}, {"Origin", "http://evil.example.com"}},
                    InitializeRequest().dump(), "application/json");
  EXPECT_EQ(res->status, 403);
  res = client.Post("/mcp", {{"Accept", kAccept}, {"Origin", "http://localhost:6274"}},
                    InitializeRequest().dump(), "application/json");
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpTransportTest, BearerTokenRequiredWhenConfigured) {
  Start(GuardOptions{"0123456789abcdef-token", {}, {}, {"/healthz"}, {}, {}});
  auto res = Post(InitializeRequest());
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("WWW-Authenticate").rfind("Bearer", 0), 0u);
  res = Post(InitializeRequest(), {{"Authorization", "Bearer nope"}});
  EXPECT_EQ(res->status, 401);
  res = Post(InitializeRequest(), {{"Authorization", "Bearer 0123456789abcdef-token"}});
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(Client().Get("/healthz")->status, 200);
}

GuardOptions TwoTokens() {
  return GuardOptions{"",
                      {},
                      {},
                      {"/healthz"},
                      {{"alice", "alice-token-0123456789"}, {"bob", "bob-token-0123456789ab"}},
                      {}};
}

TEST_F(HttpTransportTest, AnMcpSessionBelongsToTheTokenThatInitializedIt) {
  Start(TwoTokens());
  const std::string session = InitializeAs("alice-token-0123456789");
  ASSERT_FALSE(session.empty());
  // Bob's token on Alice's Mcp-Session-Id: 404, as an unknown session.
  auto res = Post(Request(1, "ping"), {{"Authorization", "Bearer bob-token-0123456789ab"},
                                       {"Mcp-Session-Id", session}});
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(json::parse(res->body)["error"]["code"], jsonrpc::rpc_code::kSessionNotFound);
  auto client = Client();
  EXPECT_EQ(client
                .Delete("/mcp", {{"Authorization", "Bearer bob-token-0123456789ab"},
                                 {"Mcp-Session-Id", session}})
                ->status,
            404);
  res = Post(Request(2, "ping"),
             {{"Authorization", "Bearer alice-token-0123456789"}, {"Mcp-Session-Id", session}});
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpTransportTest, ToolsActForTheRequestsPrincipal) {
  Start(TwoTokens());
  const std::string alice = InitializeAs("alice-token-0123456789");
  const std::string bob = InitializeAs("bob-token-0123456789ab");
  json created = CallAs("alice-token-0123456789", alice,
                        mcp::testing::CallTool(1, "session_create", json::object()));
  ASSERT_FALSE(created["result"]["isError"].get<bool>()) << created;
  const std::string id = created["result"]["structuredContent"]["session_id"];
  json mine = CallAs("alice-token-0123456789", alice,
                     mcp::testing::CallTool(2, "session_list", json::object()));
  EXPECT_EQ(mine["result"]["structuredContent"]["sessions"].size(), 1u);
  json theirs = CallAs("bob-token-0123456789ab", bob,
                       mcp::testing::CallTool(3, "session_list", json::object()));
  EXPECT_TRUE(theirs["result"]["structuredContent"]["sessions"].empty());
  json run = CallAs("bob-token-0123456789ab", bob,
                    mcp::testing::CallTool(4, "run_python", {{"code", "1"}, {"session_id", id}}));
  EXPECT_TRUE(run["result"]["isError"].get<bool>());
  EXPECT_EQ(sessions_.calls().front(), "Create alice ");
  EXPECT_EQ(sessions_.calls().back(), "Run bob " + id);
  // The session outlives the MCP session: a new MCP session of the same token reaches it.
  EXPECT_EQ(Client()
                .Delete("/mcp", {{"Authorization", "Bearer alice-token-0123456789"},
                                 {"Mcp-Session-Id", alice}})
                ->status,
            200);
  const std::string again = InitializeAs("alice-token-0123456789");
  json reconnected =
      CallAs("alice-token-0123456789", again,
             mcp::testing::CallTool(5, "run_python", {{"code", "1"}, {"session_id", id}}));
  EXPECT_FALSE(reconnected["result"]["isError"].get<bool>()) << reconnected;
}

TEST_F(HttpTransportTest, WithoutTokensTheSessionsAreLocal) {
  Start();
  Initialize();
  auto res = Post(mcp::testing::CallTool(1, "session_create", json::object()));
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(sessions_.calls().front(), "Create local ");
}

TEST_F(HttpTransportTest, LegacySseSessionBelongsToTheStreamsToken) {
  Start(TwoTokens());
  std::mutex mu;
  std::condition_variable cv;
  std::string received;
  std::atomic<bool> stop{false};
  std::thread stream([&] {
    auto client = Client();
    client.Get(
        "/sse",
        {{"Accept", "text/event-stream"}, {"Authorization", "Bearer alice-token-0123456789"}},
        [&](const char* data, std::size_t n) {
          std::lock_guard lock(mu);
          received.append(data, n);
          cv.notify_all();
          return !stop.load();
        });
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30),
                            [&] { return received.find("\n\n") != std::string::npos; }));
  }
  std::string endpoint;
  {
    std::lock_guard lock(mu);
    endpoint = ParseSse(received)[0].data.get<std::string>();
  }
  auto client = Client();
  auto res = client.Post(endpoint, {{"Authorization", "Bearer bob-token-0123456789ab"}},
                         InitializeRequest("2024-11-05").dump(), "application/json");
  EXPECT_EQ(res->status, 404);
  res = client.Post(endpoint, {{"Authorization", "Bearer alice-token-0123456789"}},
                    InitializeRequest("2024-11-05").dump(), "application/json");
  EXPECT_EQ(res->status, 202);
  stop = true;
  legacy_->Shutdown();
  stream.join();
}

TEST_F(HttpTransportTest, LegacySseEndpointAndMessageFlow) {
  Start();
  std::mutex mu;
  std::condition_variable cv;
  std::string received;
  std::atomic<bool> stop{false};
  std::thread stream([&] {
    auto client = Client();
    client.Get("/sse", {{"Accept", "text/event-stream"}}, [&](const char* data, std::size_t n) {
      std::lock_guard lock(mu);
      received.append(data, n);
      cv.notify_all();
      return !stop.load();
    });
  });
  auto wait_for = [&](const std::string& needle) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30),
                       [&] { return received.find(needle) != std::string::npos; });
  };
  ASSERT_TRUE(wait_for("\n\n"));
  std::string endpoint;
  {
    std::lock_guard lock(mu);
    auto events = ParseSse(received);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].event, "endpoint");
    endpoint = events[0].data.get<std::string>();
  }
  ASSERT_EQ(endpoint.rfind("/messages?sessionId=", 0), 0u) << endpoint;

  auto client = Client();
  auto res =
      client.Post(endpoint, InitializeRequest("2024-11-05", "init").dump(), "application/json");
  EXPECT_EQ(res->status, 202);
  ASSERT_TRUE(wait_for("\"init\""));
  res = client.Post(endpoint, CallRunPython(2, {{"code", "x"}}, "pt").dump(), "application/json");
  EXPECT_EQ(res->status, 202);
  ASSERT_TRUE(wait_for("\"id\":2"));
  {
    std::lock_guard lock(mu);
    auto events = ParseSse(received);
    ASSERT_GE(events.size(), 4u);  // endpoint, initialize result, progress, call result
    EXPECT_EQ(events[1].event, "message");
    EXPECT_EQ(events[1].data["result"]["protocolVersion"], "2024-11-05");
    EXPECT_EQ(events[2].data["method"], "notifications/progress");
    EXPECT_EQ(events.back().data["result"]["structuredContent"]["stdout"], "hello\n");
  }
  EXPECT_EQ(client.Post("/messages?sessionId=nope", "{}", "application/json")->status, 404);
  EXPECT_EQ(client.Post("/messages", "{}", "application/json")->status, 400);
  stop = true;
  legacy_->Shutdown();  // closes the stream, so the GET returns
  stream.join();
}

TEST_F(HttpTransportTest, ShortRequestsAreServedWhileStreamsAreOpen) {
  Start();
  Initialize();
  service_.SetBehaviour(service_.BlockUntilCancelled());
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([this, i] { Post(CallRunPython(100 + i, {{"code", "x"}})); });
  }
  ASSERT_TRUE(service_.WaitStarted(8));
  auto res = Post(Request("p", "ping"));  // 8 of 16 workers hold streams
  EXPECT_EQ(res->status, 200);
  streamable_->Shutdown();  // ends the session: the runs are cancelled, the streams end
  for (auto& t : callers) t.join();
}

// Streams beyond the limit are refused at once with 503 instead of queueing for a worker, and
// the workers kept for everything else still serve other requests while the limit is reached.
TEST_F(HttpTransportTest, StreamsBeyondTheLimitGet503AndOtherRequestsAreServed) {
  slots_ = std::make_shared<SlotLimiter>(3);
  threads_ = 2;         // workers for everything else
  stream_workers_ = 3;  // one per slot
  Start();
  Initialize();
  service_.SetBehaviour(service_.BlockUntilCancelled());
  std::vector<std::thread> streams;
  for (int i = 0; i < 2; ++i) {
    streams.emplace_back([this, i] { Post(CallRunPython(100 + i, {{"code", "x"}})); });
  }
  ASSERT_TRUE(service_.WaitStarted(2));
  // The third slot: a legacy SSE stream, held open until the transport shuts down.
  std::mutex mu;
  std::condition_variable cv;
  bool endpoint = false;
  streams.emplace_back([&] {
    Client().Get("/sse", {{"Accept", "text/event-stream"}}, [&](const char*, std::size_t) {
      std::lock_guard lock(mu);
      endpoint = true;
      cv.notify_all();
      return true;
    });
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return endpoint; }));
  }
  EXPECT_EQ(slots_->in_use(), 3u);

  auto call = Post(CallRunPython(200, {{"code", "x"}}));
  ASSERT_TRUE(call);
  EXPECT_EQ(call->status, 503);
  EXPECT_EQ(call->get_header_value("Retry-After"), "1");
  auto body = json::parse(call->body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << call->body;
  EXPECT_EQ(body["id"], 200);
  EXPECT_NE(body["error"]["message"].get<std::string>().find("server.max_streams"),
            std::string::npos)
      << call->body;
  auto sse = Client().Get("/sse", {{"Accept", "text/event-stream"}});
  ASSERT_TRUE(sse);
  EXPECT_EQ(sse->status, 503);
  EXPECT_EQ(json::parse(sse->body, nullptr, false)["error"]["code"],
            jsonrpc::rpc_code::kServerError);
  EXPECT_EQ(service_.requests().size(), 2u);  // the refused call never ran
  EXPECT_EQ(legacy_->session_count(), 1u);    // nor did the refused stream open a session

  EXPECT_EQ(Post(Request("p", "ping"))->status, 200);
  EXPECT_EQ(Client().Get("/healthz")->status, 200);

  // The streams end (their runs are cancelled): their slots are given back.
  streamable_->Shutdown();
  legacy_->Shutdown();
  for (auto& t : streams) t.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (slots_->in_use() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(slots_->in_use(), 0u);
}

// One token holding its share of the stream slots gets 429 for one more; another token still
// gets a stream.
TEST_F(HttpTransportTest, OneTokenCannotHoldEveryStream) {
  slots_ = std::make_shared<SlotLimiter>(4, 1);
  stream_workers_ = 4;
  Start(TwoTokens());
  const std::string alice = InitializeAs("alice-token-0123456789");
  const std::string bob = InitializeAs("bob-token-0123456789ab");
  service_.SetBehaviour(service_.BlockUntilCancelled());
  std::thread first([&] {
    Post(CallRunPython(1, {{"code", "x"}}),
         {{"Authorization", "Bearer alice-token-0123456789"}, {"Mcp-Session-Id", alice}});
  });
  ASSERT_TRUE(service_.WaitStarted(1));
  auto refused =
      Post(CallRunPython(2, {{"code", "x"}}),
           {{"Authorization", "Bearer alice-token-0123456789"}, {"Mcp-Session-Id", alice}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  EXPECT_NE(refused->body.find("per_principal.max_streams"), std::string::npos) << refused->body;
  std::thread second([&] {
    Post(CallRunPython(3, {{"code", "x"}}),
         {{"Authorization", "Bearer bob-token-0123456789ab"}, {"Mcp-Session-Id", bob}});
  });
  EXPECT_TRUE(service_.WaitStarted(2));  // bob's call runs
  streamable_->Shutdown();
  first.join();
  second.join();
}

// A client that initializes again and again without DELETE only loses its own oldest idle
// sessions; another token's session is untouched.
TEST_F(HttpTransportTest, McpSessionsPerTokenAreBoundedOldestIdleFirst) {
  sessions_per_principal_ = 2;
  Start(TwoTokens());
  const std::string bob = InitializeAs("bob-token-0123456789ab");
  std::vector<std::string> alice;
  for (int i = 0; i < 3; ++i) alice.push_back(InitializeAs("alice-token-0123456789"));
  auto ping = [&](const std::string& token, const std::string& session) {
    auto res = Post(Request(9, "ping"),
                    {{"Authorization", "Bearer " + token}, {"Mcp-Session-Id", session}});
    return res ? res->status : 0;
  };
  EXPECT_EQ(ping("alice-token-0123456789", alice[0]), 404);  // the least recently used ended
  EXPECT_EQ(ping("alice-token-0123456789", alice[1]), 200);
  EXPECT_EQ(ping("alice-token-0123456789", alice[2]), 200);
  EXPECT_EQ(ping("bob-token-0123456789ab", bob), 200);
  EXPECT_EQ(streamable_->session_count(), 3u);
}

}  // namespace
}  // namespace sandbox::transport
