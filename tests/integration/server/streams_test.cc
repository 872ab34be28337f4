// The server binary with its default stream limit (server.max_streams, 256): with every slot
// held by an open GET /sse stream, /healthz and POSTs are still answered, because the server
// has a worker per stream slot on top of http_threads, and one stream more is refused at once
// with 503 and a JSON error instead of waiting for a worker. No pool container is needed
// (min_idle 0), only the engine and the image the server checks at start-up.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "integration/server/server_process.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using sandbox::testing::FreePort;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

constexpr std::size_t kDefaultMaxStreams = 256;  // config::ServerConfig's default

// A raw HTTP/1.1 connection that stays open (an SSE stream is read incrementally).
class Connection {
 public:
  explicit Connection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    // Reads give up after a minute, so a stream that never gets a worker fails the test
    // instead of hanging it.
    timeval timeout{60, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool Send(const std::string& request) {
    return connected_ && ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
                             static_cast<ssize_t>(request.size());
  }
  // Reads until `needle` has arrived; false at end of stream, error or the read timeout.
  bool ReadUntil(const std::string& needle) {
    char buf[4096];
    while (received_.find(needle) == std::string::npos) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      received_.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  const std::string& received() const { return received_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string received_;
};

std::string Get(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
}

std::string Post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "") {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
         "application/json\r\nAccept: application/json, text/event-stream\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The sessionId in a legacy stream's `endpoint` event.
std::string SessionIdOf(const std::string& stream) {
  const std::string key = "sessionId=";
  auto at = stream.find(key);
  if (at == std::string::npos) return {};
  at += key.size();
  return stream.substr(at, stream.find('\n', at) - at);
}

TEST(StreamsTest, WithEveryStreamSlotTakenOtherRequestsAreServedAndOneMoreStreamIsRefused) {
  const auto instance = sandbox::testing::TestInstanceId("streams");
  sandbox::testing::ServerProcess server(
      instance, FreePort(), R"("pools": [{"name": "default", "min_idle": 0, "max_total": 1}])");
  ASSERT_TRUE(WaitFor([&] { return server.Ready(/*idle=*/0); }, seconds(120)));

  std::vector<std::unique_ptr<Connection>> streams;
  for (std::size_t i = 0; i < kDefaultMaxStreams; ++i) {
    streams.push_back(std::make_unique<Connection>(server.port()));
    ASSERT_TRUE(streams.back()->Send(Get("/sse"))) << "stream " << i;
  }
  // Every stream got a worker: each has its endpoint event.
  for (std::size_t i = 0; i < kDefaultMaxStreams; ++i) {
    ASSERT_TRUE(streams[i]->ReadUntil("event: endpoint\n")) << "stream " << i << " got no worker";
    ASSERT_TRUE(streams[i]->ReadUntil("\n\n"));
  }

  // One stream more: refused at once, with a JSON-RPC error naming the limit.
  Connection extra(server.port());
  ASSERT_TRUE(extra.Send(Get("/sse")));
  ASSERT_TRUE(extra.ReadUntil("\r\n\r\n"));
  EXPECT_EQ(extra.received().rfind("HTTP/1.1 503", 0), 0u) << extra.received();
  ASSERT_TRUE(extra.ReadUntil("}")) << extra.received();
  EXPECT_NE(extra.received().find("server.max_streams"), std::string::npos) << extra.received();

  // /healthz and POSTs are answered meanwhile.
  Connection health(server.port());
  ASSERT_TRUE(health.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  ASSERT_TRUE(health.ReadUntil("\r\n\r\n"));
  EXPECT_EQ(health.received().rfind("HTTP/1.1 200", 0), 0u) << health.received();

  Connection init(server.port());
  ASSERT_TRUE(init.Send(Post("/mcp", R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
      "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})")));
  ASSERT_TRUE(init.ReadUntil("\r\n\r\n"));
  EXPECT_EQ(init.received().rfind("HTTP/1.1 200", 0), 0u) << init.received();
  EXPECT_NE(init.received().find("Mcp-Session-Id: "), std::string::npos) << init.received();

  // A message POSTed to one of the open sessions is accepted, and its answer arrives on it.
  const std::string session = SessionIdOf(streams[0]->received());
  ASSERT_FALSE(session.empty()) << streams[0]->received();
  Connection message(server.port());
  ASSERT_TRUE(message.Send(
      Post("/messages?sessionId=" + session, R"({"jsonrpc":"2.0","id":"p","method":"ping"})")));
  ASSERT_TRUE(message.ReadUntil("\r\n\r\n"));
  EXPECT_EQ(message.received().rfind("HTTP/1.1 202", 0), 0u) << message.received();
  EXPECT_TRUE(streams[0]->ReadUntil(R"("id":"p")")) << streams[0]->received();

  streams.clear();  // closing the streams ends their sessions
  const int status = server.Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
}

}  // namespace
}  // namespace sandbox
