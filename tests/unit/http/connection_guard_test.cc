// The ConnectionGuard in front of a real cpp-httplib server in this process (both on loopback;
// no Docker): forwarding and keep-alive, response framing, refusals with JSON bodies, timeouts,
// connection caps, cancellation on client disconnect, and the internal socket that only its
// owner can reach.
#include "sandbox/http/connection_guard.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "sandbox/core/byte_budget.h"
#include "sandbox/http/request_guard.h"
#include "sandbox/http/server_setup.h"

namespace sandbox::http {
namespace {

using namespace std::chrono_literals;

// A raw client connection, optionally from another loopback address (127.0.0.x).
class Raw {
 public:
  explicit Raw(int port, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{20, 0};  // a read that never completes fails the test instead of hanging
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    if (from != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &local.sin_addr);
      bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Raw() { Close(); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool Send(const std::string& data) {
    return connected_ &&
           ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // One response: its head and, by Content-Length, its body ("" at EOF or timeout).
  std::string ReadResponse() {
    while (buffer_.find("\r\n\r\n") == std::string::npos) {
      if (!Fill()) return {};
    }
    const auto head_end = buffer_.find("\r\n\r\n") + 4;
    std::size_t length = 0;
    const std::string head = buffer_.substr(0, head_end);
    auto at = head.find("Content-Length: ");
    if (at != std::string::npos) length = std::stoul(head.substr(at + 16));
    while (buffer_.size() < head_end + length) {
      if (!Fill()) return {};
    }
    std::string response = buffer_.substr(0, head_end + length);
    buffer_.erase(0, head_end + length);
    return response;
  }
  // Reads until the peer closes; true if it did (false on timeout).
  bool ReadToEof() {
    for (;;) {
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }
  bool ReadUntil(const std::string& needle) {
    while (buffer_.find(needle) == std::string::npos) {
      if (!Fill()) return false;
    }
    return true;
  }
  const std::string& buffered() const { return buffer_; }
  bool connected() const { return bound_ && connected_; }

 private:
  bool Fill() {
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool bound_ = true;
  bool connected_ = false;
  std::string buffer_;
};

std::string BodyOf(const std::string& response) {
  return response.substr(response.find("\r\n\r\n") + 4);
}

int StatusOf(const std::string& response) {
  return response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
}

class GuardTest : public ::testing::Test {
 protected:
  void Start(ConnectionGuardOptions options = {}) {
    request_guard_ = std::make_unique<RequestGuard>(GuardOptions{});
    HttpServerOptions http_options;
    http_options.threads = 8;
    http_options.max_body_bytes = options.head.max_body_bytes;
    ConfigureHttpServer(http_, http_options, *request_guard_);
    http_.Get("/hello", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("hello " + req.get_header_value("X-Forwarded-For"), "text/plain");
    });
    http_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "application/octet-stream");
    });
    http_.Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain",
                                       [](std::size_t offset, httplib::DataSink& sink) {
                                         if (offset < 30) {
                                           sink.write("0123456789", 10);
                                         } else {
                                           sink.done();
                                         }
                                         return true;
                                       });
    });
    http_.Get("/stream", [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider(
          "text/event-stream", [this](std::size_t, httplib::DataSink& sink) {
            stream_started_ = true;
            // Like the transports: wait, watching the client.
            // Bounded: a missed cancel fails the test below
            // instead of hanging http_.stop().
            const auto until = std::chrono::steady_clock::now() + 15s;
            while (sink.is_writable() && std::chrono::steady_clock::now() < until) {
              std::this_thread::sleep_for(20ms);
              if (!sink.write(": ping\n\n", 8)) break;
            }
            stream_cancelled_ = std::chrono::steady_clock::now() < until;
            return false;
          });
    });
    http_.Get("/throw", [](const httplib::Request&, httplib::Response&) {
      throw std::runtime_error("secret detail");
    });
    auto internal = InternalSocket::Bind(http_, ::testing::TempDir());
    ASSERT_TRUE(internal.ok()) << internal.error().message();
    internal_ = std::move(*internal);
    auto logger = std::make_shared<spdlog::logger>("guard-test",
                                                   std::make_shared<spdlog::sinks::null_sink_mt>());
    auto guard = ConnectionGuard::Listen("127.0.0.1", 0, internal_->path(), options, logger);
    ASSERT_TRUE(guard.ok()) << guard.error().message();
    front_ = std::move(*guard);
    front_thread_ = std::thread([this] { front_->Run(); });
    http_thread_ = std::thread([this] {
      http_.listen_after_bind();
      listen_returned_.store(true);
    });
  }
  void TearDown() override {
    if (front_) front_->Stop();
    if (front_thread_.joinable()) front_thread_.join();
    // Not http_.stop(): a test whose requests the guard refuses itself may end before the
    // listen has begun, and that stop would be lost (the join then hung CI for 600 s).
    StopListening(http_, listen_returned_);
    if (http_thread_.joinable()) http_thread_.join();
  }
  int port() const { return front_->port(); }

  httplib::Server http_;
  std::unique_ptr<RequestGuard> request_guard_;
  std::unique_ptr<InternalSocket> internal_;
  std::unique_ptr<ConnectionGuard> front_;
  std::thread front_thread_;
  std::thread http_thread_;
  std::atomic<bool> listen_returned_{false};
  std::atomic<bool> stream_started_{false};
  std::atomic<bool> stream_cancelled_{false};
};

const char* const kGetHello = "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n";

TEST_F(GuardTest, ForwardsRequestsAndKeepsTheClientsConnection) {
  Start();
  Raw client(port());
  ASSERT_TRUE(client.Send(kGetHello));
  const std::string first = client.ReadResponse();
  EXPECT_EQ(StatusOf(first), 200) << first;
  EXPECT_EQ(BodyOf(first), "hello 127.0.0.1");  // X-Forwarded-For: the client's address
  EXPECT_EQ(first.find("Connection: close"), std::string::npos) << first;
  // The same connection serves more, pipelined ones included, with bodies.
  ASSERT_TRUE(client.Send(
      std::string("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nabcde") +
      kGetHello));
  const std::string echo = client.ReadResponse();
  EXPECT_EQ(BodyOf(echo), "abcde");
  EXPECT_EQ(StatusOf(client.ReadResponse()), 200);
}

TEST_F(GuardTest, TheClientCannotForgeItsForwardedAddress) {
  Start();
  Raw client(port());
  ASSERT_TRUE(
      client.Send("GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 10.1.2.3\r\n\r\n"));
  EXPECT_EQ(BodyOf(client.ReadResponse()), "hello 127.0.0.1");
}

TEST_F(GuardTest, RelaysChunkedResponsesAndKeepsTheConnection) {
  Start();
  Raw client(port());
  ASSERT_TRUE(
      client.Send(std::string("GET /chunked HTTP/1.1\r\nHost: localhost\r\n\r\n") + kGetHello));
  // The whole chunked body, then the next response on the same connection.
  ASSERT_TRUE(client.ReadUntil("hello 127.0.0.1")) << client.buffered();
  const std::string& all = client.buffered();
  EXPECT_NE(all.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_NE(all.find("0123456789\r\n0\r\n\r\nHTTP/1.1 200"), std::string::npos) << all;
  EXPECT_EQ(all.find("Connection: close"), std::string::npos);
}

TEST_F(GuardTest, AClientThatClosesCancelsItsStream) {
  Start();
  {
    Raw client(port());
    ASSERT_TRUE(client.Send("GET /stream HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    ASSERT_FALSE(client.ReadResponse().empty());  // the head
    // httplib writes the head before it calls the content provider: wait for the provider.
    const auto started_by = std::chrono::steady_clock::now() + 10s;
    while (!stream_started_.load() && std::chrono::steady_clock::now() < started_by) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(stream_started_.load());
  }
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!stream_cancelled_.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(stream_cancelled_.load());
}

// The hop to cpp-httplib is a Unix socket in a directory only its owner may enter: another
// user's process cannot connect to it (a loopback TCP port let anyone hold httplib's workers).
TEST_F(GuardTest, TheInternalSocketIsReachableByItsOwnerOnly) {
  Start();
  struct stat dir {};
  ASSERT_EQ(::stat(internal_->directory().c_str(), &dir), 0);
  EXPECT_TRUE(S_ISDIR(dir.st_mode));
  EXPECT_EQ(dir.st_mode & 0777, 0700u);
  EXPECT_EQ(dir.st_uid, ::getuid());
  struct stat sock {};
  ASSERT_EQ(::stat(internal_->path().c_str(), &sock), 0);
  EXPECT_TRUE(S_ISSOCK(sock.st_mode));
  EXPECT_EQ(sock.st_mode & 0777, 0600u);
  // And the guard's requests still arrive through it.
  Raw client(port());
  ASSERT_TRUE(client.Send(kGetHello));
  EXPECT_EQ(StatusOf(client.ReadResponse()), 200);
}

// The socket and its directory go with the InternalSocket.
TEST(InternalSocketTest, RemovesItsSocketAndDirectoryWhenDestroyed) {
  httplib::Server server;
  auto internal = InternalSocket::Bind(server, ::testing::TempDir());
  ASSERT_TRUE(internal.ok()) << internal.error().message();
  const std::string dir = (*internal)->directory();
  const std::string path = (*internal)->path();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  server.stop();
  internal->reset();
  EXPECT_NE(::stat(path.c_str(), &st), 0);
  EXPECT_NE(::stat(dir.c_str(), &st), 0);
}

// A parent whose paths would not fit a Unix socket's address is refused, saying so.
TEST(InternalSocketTest, ATooLongParentIsRefusedNamingTheLimit) {
  const std::string parent = ::testing::TempDir() + "/" + std::string(100, 'p');
  ASSERT_TRUE(::mkdir(parent.c_str(), 0700) == 0 || errno == EEXIST);
  httplib::Server server;
  auto internal = InternalSocket::Bind(server, parent);
  ASSERT_FALSE(internal.ok());
  EXPECT_NE(internal.error().message().find("TMPDIR"), std::string::npos)
      << internal.error().message();
  ::rmdir(parent.c_str());
}

TEST_F(GuardTest, HttplibsOwnRefusalsGetJsonBodies) {
  Start();
  Raw client(port());
  ASSERT_TRUE(client.Send("GET /nowhere HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  const std::string missing = client.ReadResponse();
  EXPECT_EQ(StatusOf(missing), 404);
  auto body = nlohmann::json::parse(BodyOf(missing));
  EXPECT_NE(body["error"]["message"].get<std::string>().find("/nowhere"), std::string::npos);
  ASSERT_TRUE(client.Send("GET /throw HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  const std::string thrown = client.ReadResponse();
  EXPECT_EQ(StatusOf(thrown), 500);
  EXPECT_EQ(thrown.find("secret detail"), std::string::npos) << thrown;
  EXPECT_TRUE(nlohmann::json::accept(BodyOf(thrown))) << thrown;
}

TEST_F(GuardTest, RefusesOversizedHeadsWithJsonNamingTheLimitAndCloses) {
  Start();
  std::string many = "GET /hello HTTP/1.1\r\nHost: localhost\r\n";
  for (int i = 0; i < 150; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  Raw count(port());
  ASSERT_TRUE(count.Send(many + "\r\n"));
  const std::string refused = count.ReadResponse();
  EXPECT_EQ(StatusOf(refused), 431) << refused;
  EXPECT_EQ(nlohmann::json::parse(BodyOf(refused))["error"]["data"]["limit"], "server.max_headers");
  EXPECT_TRUE(count.ReadToEof());

  Raw endless(port());  // a header line that never ends
  ASSERT_TRUE(endless.Send("GET /hello HTTP/1.1\r\nX-Big: " + std::string(20000, 'a')));
  EXPECT_EQ(StatusOf(endless.ReadResponse()), 431);

  Raw uri(port());
  ASSERT_TRUE(uri.Send("GET /" + std::string(10000, 'a') + " HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(StatusOf(uri.ReadResponse()), 414);
}

TEST_F(GuardTest, RefusesABodyOverTheLimitBeforeItIsSentAndAnswersExpectContinue) {
  ConnectionGuardOptions options;
  options.head.max_body_bytes = 1000;
  Start(options);
  Raw big(port());
  ASSERT_TRUE(big.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n"));
  const std::string refused = big.ReadResponse();
  EXPECT_EQ(StatusOf(refused), 413);
  auto body = nlohmann::json::parse(BodyOf(refused));
  EXPECT_EQ(body["error"]["data"]["limit"], "server.max_body_bytes");
  EXPECT_EQ(body["error"]["data"]["value"], 1000);

  Raw expect(port());
  ASSERT_TRUE(
      expect.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nExpect: "
                  "100-continue\r\nContent-Length: 3\r\n\r\n"));
  EXPECT_EQ(StatusOf(expect.ReadResponse()), 100);
  ASSERT_TRUE(expect.Send("xyz"));
  EXPECT_EQ(BodyOf(expect.ReadResponse()), "xyz");

  Raw chunked(port());
  ASSERT_TRUE(
      chunked.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: "
                   "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
  EXPECT_EQ(StatusOf(chunked.ReadResponse()), 411);
}

TEST_F(GuardTest, ABodyIsReservedInTheInflightBudgetBeforeItIsReadOr503) {
  ByteBudget budget(64 << 10);
  ConnectionGuardOptions options;
  options.inflight = &budget;
  Start(options);
  auto others = budget.TryReserve(60 << 10);  // other clients hold most of the budget
  ASSERT_TRUE(others);
  Raw refused_client(port());
  ASSERT_TRUE(refused_client.Send(
      "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000\r\n\r\n"));
  const std::string refused = refused_client.ReadResponse();  // before a byte of the body
  EXPECT_EQ(StatusOf(refused), 503) << refused;
  auto body = nlohmann::json::parse(BodyOf(refused));
  EXPECT_EQ(body["error"]["data"]["limit"], "memory.inflight_bytes");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("the request body needs"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos);

  others.reset();
  Raw client(port());
  ASSERT_TRUE(
      client.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000\r\n\r\n" +
                  std::string(10000, 'b')));
  const std::string echoed = client.ReadResponse();
  EXPECT_EQ(StatusOf(echoed), 200) << echoed.substr(0, 200);
  EXPECT_EQ(BodyOf(echoed), std::string(10000, 'b'));
  EXPECT_EQ(budget.in_use(), 0);  // given back with the response
  EXPECT_GE(budget.peak(), 10000);
}

TEST_F(GuardTest, ASlowHeadGets408AndAnIdleConnectionIsClosed) {
  ConnectionGuardOptions options;
  options.head_timeout = 1s;
  options.idle_timeout = 1s;
  Start(options);
  Raw slow(port());
  ASSERT_TRUE(slow.Send("GET /hello HTTP/1.1\r\n"));
  const std::string refused = slow.ReadResponse();
  EXPECT_EQ(StatusOf(refused), 408) << refused;
  EXPECT_EQ(nlohmann::json::parse(BodyOf(refused))["error"]["data"]["limit"],
            "server.header_timeout_s");
  Raw idle(port());
  EXPECT_TRUE(idle.ReadToEof());
  EXPECT_TRUE(idle.buffered().empty());
}

TEST_F(GuardTest, ConnectionsBeyondTheCapsGet503NamingTheCap) {
  ConnectionGuardOptions options;
  options.max_connections = 4;
  options.max_connections_per_ip = 2;
  Start(options);
  Raw a(port(), "127.0.0.2");
  Raw b(port(), "127.0.0.2");
  ASSERT_TRUE(a.Send(kGetHello));  // both are accepted before the next one
  ASSERT_EQ(StatusOf(a.ReadResponse()), 200);
  ASSERT_TRUE(b.Send(kGetHello));
  ASSERT_EQ(StatusOf(b.ReadResponse()), 200);
  Raw third(port(), "127.0.0.2");
  const std::string per_ip = third.ReadResponse();
  EXPECT_EQ(StatusOf(per_ip), 503) << per_ip;
  EXPECT_EQ(nlohmann::json::parse(BodyOf(per_ip))["error"]["data"]["limit"],
            "server.max_connections_per_ip");
  Raw c(port(), "127.0.0.3");
  Raw d(port(), "127.0.0.3");
  ASSERT_TRUE(d.Send(kGetHello));
  ASSERT_EQ(StatusOf(d.ReadResponse()), 200);
  Raw fifth(port(), "127.0.0.4");
  const std::string global = fifth.ReadResponse();
  EXPECT_EQ(StatusOf(global), 503) << global;
  EXPECT_EQ(nlohmann::json::parse(BodyOf(global))["error"]["data"]["limit"],
            "server.max_connections");
  // A connection that closes frees its place.
  a.Close();
  std::this_thread::sleep_for(300ms);
  Raw again(port(), "127.0.0.4");
  ASSERT_TRUE(again.Send(kGetHello));
  EXPECT_EQ(StatusOf(again.ReadResponse()), 200);
}

}  // namespace
}  // namespace sandbox::http
