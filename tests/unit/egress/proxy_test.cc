// The egress proxy end to end on loopback (proxy.h): a client connects from 127.0.0.1 (or
// 127.0.0.2, a second sandbox), and every connection the policy allows goes to a loopback test
// server through a fake Upstream (the policy itself never allows loopback, rightly). The fake
// resolver counts its calls: a refused name must never reach it.
#include "egress/proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "egress/client_hello.h"
#include "egress/control.h"
#include "egress/event_sink.h"
#include "egress/policy_table.h"
#include "egress/socket_address.h"
#include "egress/upstream.h"
#include "sandbox/core/unique_fd.h"

namespace sandbox::egress {
namespace {

using namespace std::chrono_literals;

config::IpAddress Ip(const char* text) { return *config::ParseIpAddress(text); }

// Routes of addresses that lead elsewhere than the test server (a port that refuses).
struct RouteOverrides {
  std::mutex mutex;
  std::map<std::string, int> ports;  // by IpAddress::ToString
};

// Every allowed address leads to the test server unless overridden; names resolve as the test
// says.
class FakeUpstream final : public Upstream {
 public:
  FakeUpstream(std::atomic<int>& port, std::map<std::string, std::vector<config::IpAddress>> names,
               std::atomic<int>& lookups, RouteOverrides& overrides)
      : port_(port), names_(std::move(names)), lookups_(lookups), overrides_(overrides) {}
  Result<std::vector<config::IpAddress>> Resolve(const std::string& host) override {
    lookups_.fetch_add(1);
    auto it = names_.find(host);
    if (it == names_.end()) return Error(ErrorCode::kUnavailable, "Name or service not known");
    return it->second;
  }
  SocketAddress Route(const config::IpAddress& address, std::uint16_t /*port*/) override {
    {
      const std::lock_guard lock(overrides_.mutex);
      auto it = overrides_.ports.find(address.ToString());
      if (it != overrides_.ports.end()) {
        return ToSocketAddress(Ip("127.0.0.1"), static_cast<std::uint16_t>(it->second));
      }
    }
    return ToSocketAddress(Ip("127.0.0.1"), static_cast<std::uint16_t>(port_.load()));
  }

 private:
  std::atomic<int>& port_;
  std::map<std::string, std::vector<config::IpAddress>> names_;
  std::atomic<int>& lookups_;
  RouteOverrides& overrides_;
};

// A loopback port that refuses connections (bound, never listening), while it lives.
class RefusingPort {
 public:
  RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    const SocketAddress address = ToSocketAddress(Ip("127.0.0.1"), 0);
    EXPECT_EQ(::bind(fd_.get(), address.sockaddr_ptr(), address.length), 0);
  }
  int port() const { return BoundPort(fd_.get()); }

 private:
  Fd fd_;
};

void SetTimeouts(int fd) {
  // A hang fails the test instead of holding it (never an assertion on time).
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads until `done` says so, EOF or an error.
std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done) {
  std::string got;
  char buf[4096];
  while (!done(got)) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

std::string ReadToEof(int fd) {
  return ReadUntil(fd, [](const std::string&) { return false; });
}

std::string ReadBytes(int fd, std::size_t n) {
  return ReadUntil(fd, [n](const std::string& got) { return got.size() >= n; });
}

// A loopback server: each connection is handed to `handler` on a thread of its own.
class TestServer {
 public:
  using Handler = std::function<void(int fd)>;
  explicit TestServer(Handler handler) : handler_(std::move(handler)) {
    listener_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const SocketAddress address = ToSocketAddress(Ip("127.0.0.1"), 0);
    EXPECT_EQ(::bind(listener_.get(), address.sockaddr_ptr(), address.length), 0);
    EXPECT_EQ(::listen(listener_.get(), 64), 0);
    port_ = BoundPort(listener_.get());
    thread_ = std::thread([this] {
      for (;;) {
        Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!fd.valid()) return;
        accepted_.fetch_add(1);
        SetTimeouts(fd.get());
        const std::lock_guard lock(mutex_);
        handlers_.emplace_back([this, conn = std::move(fd)]() mutable {
          handler_(conn.get());
          conn.Reset();  // the upstream's close, which ends a response or a tunnel
        });
      }
    });
  }
  ~TestServer() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
    for (auto& t : handlers_) t.join();
  }
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  Handler handler_;
  Fd listener_;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::mutex mutex_;
  std::vector<std::thread> handlers_;
  std::thread thread_;
};

// A minimal TLS ClientHello record, with a server_name extension when `sni` is not empty.
std::string ClientHello(const std::string& sni) {
  auto u16 = [](std::size_t n) {
    return std::string{static_cast<char>((n >> 8) & 0xFF), static_cast<char>(n & 0xFF)};
  };
  std::string body = "\x03\x03" + std::string(32, 'r') + std::string(1, '\0') + u16(2) +
                     "\x13\x01" + std::string("\x01\x00", 2);
  std::string extensions;
  if (!sni.empty()) {
    const std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
    const std::string list = u16(entry.size()) + entry;
    extensions = std::string(2, '\0') + u16(list.size()) + list;
  }
  body += u16(extensions.size()) + extensions;
  const std::string handshake =
      "\x01" + std::string(1, '\0') + u16(body.size()) + body;  // 3-byte length
  return "\x16\x03\x01" + u16(handshake.size()) + handshake;
}

constexpr char kEstablished[] = "HTTP/1.1 200 Connection established\r\n\r\n";

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>([this](int fd) { Serve(fd); });
    route_port_ = server_->port();
    Start();
  }

  void TearDown() override { StopProxy(); }

  void Start() {
    events_ = std::make_unique<EventSink>([this](std::string_view line) {
      const std::lock_guard lock(mutex_);
      lines_.push_back(nlohmann::json::parse(line));
      return true;
    });
    std::map<std::string, std::vector<config::IpAddress>> names = {
        {"pypi.org", {Ip("203.0.113.10")}},
        {"files.pythonhosted.org", {Ip("203.0.113.11")}},
        {"internal.example.com", {Ip("10.1.2.3"), Ip("192.168.0.1")}},
        {"multi.example", {Ip("203.0.113.20"), Ip("10.1.2.3"), Ip("203.0.113.21")}},
    };
    auto proxy =
        Proxy::Listen("127.0.0.1", 0, options_, table_, tls_, *events_,
                      std::make_unique<FakeUpstream>(route_port_, names, lookups_, overrides_));
    ASSERT_TRUE(proxy.ok()) << proxy.error().message();
    proxy_ = std::move(*proxy);
    thread_ = std::thread([this] { proxy_->Run(); });
  }

  void StopProxy() {
    if (!proxy_) return;
    proxy_->Stop();
    thread_.join();
    proxy_.reset();
    events_.reset();
  }

  // The policy of the sandbox at `addr`, as the server sets it.
  void SetPolicy(const char* addr, const char* pool, const std::string& policy_json) {
    const auto answer =
        ApplyControlLine(table_, tls_,
                         std::string(R"({"op":"set","addr":")") + addr + R"(","pool":")" + pool +
                             R"(","policy":)" + policy_json + "}");
    ASSERT_EQ(answer["ev"], "applied") << answer.dump();
  }

  // A client connection to the proxy from `from` (any 127/8 address is this host's).
  Fd Connect(const char* from = "127.0.0.1") {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const SocketAddress local = ToSocketAddress(Ip(from), 0);
    EXPECT_EQ(::bind(fd.get(), local.sockaddr_ptr(), local.length), 0);
    const SocketAddress to =
        ToSocketAddress(Ip("127.0.0.1"), static_cast<std::uint16_t>(proxy_->port()));
    EXPECT_EQ(::connect(fd.get(), to.sockaddr_ptr(), to.length), 0);
    SetTimeouts(fd.get());
    return fd;
  }

  // Sends `request` from `from`, half-closes, and reads the whole answer.
  std::string Exchange(const std::string& request, const char* from = "127.0.0.1") {
    Fd fd = Connect(from);
    EXPECT_TRUE(SendAll(fd.get(), request));
    ::shutdown(fd.get(), SHUT_WR);
    return ReadToEof(fd.get());
  }

  // Waits until every connection is closed, then for the events written so far.
  std::vector<nlohmann::json> Settled() {
    while (proxy_->stats().open != 0) std::this_thread::sleep_for(5ms);
    events_->Flush();
    const std::lock_guard lock(mutex_);
    return lines_;
  }

  nlohmann::json LastConnEvent() {
    const auto lines = Settled();
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      if ((*it)["ev"] == "conn") return *it;
    }
    return nullptr;
  }

  // The test server: echoes a tunnel's bytes; answers a plain request with "hello".
  void Serve(int fd) {
    std::string first = ReadBytes(fd, 1);
    if (first.empty()) return;
    if (first[0] == '\x16') {  // a tunnel: echo until EOF
      std::string all = first;
      SendAll(fd, first);
      char buf[4096];
      for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        all.append(buf, static_cast<std::size_t>(n));
        SendAll(fd, std::string_view(buf, static_cast<std::size_t>(n)));
      }
      const std::lock_guard lock(mutex_);
      received_.push_back(all);
      return;
    }
    std::string request = first;
    while (request.find("\r\n\r\n") == std::string::npos) {
      const std::string more = ReadBytes(fd, 1);
      if (more.empty()) return;
      request += more;
    }
    const auto end = request.find("\r\n\r\n") + 4;
    const auto length_at = request.find("Content-Length: ");
    if (length_at != std::string::npos && length_at < end) {
      const auto length = static_cast<std::size_t>(std::stoul(request.substr(length_at + 16)));
      if (request.size() < end + length) request += ReadBytes(fd, end + length - request.size());
    }
    {
      const std::lock_guard lock(mutex_);
      received_.push_back(request);
    }
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello");
  }

  std::vector<std::string> Received() {
    const std::lock_guard lock(mutex_);
    return received_;
  }

  ProxyOptions options_;
  PolicyTable table_;
  TlsSettings tls_;
  std::atomic<int> lookups_{0};
  std::atomic<int> route_port_{0};
  RouteOverrides overrides_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<EventSink> events_;
  std::unique_ptr<Proxy> proxy_;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<nlohmann::json> lines_;
  std::vector<std::string> received_;
};

constexpr char kPypiPolicy[] =
    R"({"mode":"allowlist","allow":["pypi.org:443","*.pythonhosted.org:443","pypi.org:80",)"
    R"("internal.example.com:443"],"deny":["evil.pythonhosted.org"]})";

TEST_F(ProxyTest, AnAllowedConnectWithItsSniIsRelayedByteExactBothWays) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  Fd fd = Connect();
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n"));
  EXPECT_EQ(ReadBytes(fd.get(), sizeof(kEstablished) - 1), kEstablished);
  std::string tunnel = ClientHello("pypi.org");
  std::string payload;
  for (int i = 0; i < 200'000; ++i) payload.push_back(static_cast<char>(i * 7));
  tunnel += payload;
  std::thread writer([&] { EXPECT_TRUE(SendAll(fd.get(), tunnel)); });
  EXPECT_EQ(ReadBytes(fd.get(), tunnel.size()), tunnel);  // the server echoes
  writer.join();
  ::shutdown(fd.get(), SHUT_WR);
  EXPECT_EQ(ReadToEof(fd.get()), "");  // the half-close passed both ways
  fd.Reset();
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["pool"], "data");
  EXPECT_EQ(event["sni"], "pypi.org");
  EXPECT_EQ(event["target"], "PyPI.org:443");
  EXPECT_EQ(event["bytes_up"], tunnel.size());
  EXPECT_EQ(event["bytes_down"], tunnel.size());
  ASSERT_EQ(Received().size(), 1U);
  EXPECT_EQ(Received()[0], tunnel);
  EXPECT_EQ(lookups_.load(), 1);
  EXPECT_EQ(proxy_->stats().allowed, 1U);
}

TEST_F(ProxyTest, AHelloForAnotherNameGetsAnAccessDeniedAlert) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string answer =
      Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n" + ClientHello("evil.com"));
  EXPECT_EQ(answer, kEstablished + TlsAlert(kAlertAccessDenied));
  // And without any server name.
  EXPECT_EQ(Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n" + ClientHello("")),
            kEstablished + TlsAlert(kAlertAccessDenied));
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "refused") << event.dump();
  EXPECT_NE(event["reason"].get<std::string>().find("names no server"), std::string::npos);
  EXPECT_TRUE(Received().empty());  // not a byte of it went upstream
  EXPECT_EQ(proxy_->stats().sni_refused, 2U);
}

TEST_F(ProxyTest, ATunnelThatDoesNotStartWithTlsIsClosed) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string answer =
      Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n");
  EXPECT_EQ(answer, kEstablished);
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "refused") << event.dump();
  EXPECT_NE(event["reason"].get<std::string>().find("only TLS"), std::string::npos);
  EXPECT_EQ(proxy_->stats().not_tls, 1U);
  EXPECT_TRUE(Received().empty());
}

TEST_F(ProxyTest, ADeniedNameIs403NamingThePoolAndTheReasonAndIsNeverResolved) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string denied = Exchange("CONNECT evil.pythonhosted.org:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(denied.starts_with("HTTP/1.1 403 Forbidden\r\n")) << denied;
  EXPECT_NE(denied.find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(denied.find("sandbox-mcp egress: refused by the network policy of pool \"data\": "
                        "evil.pythonhosted.org:443 is denied by \"evil.pythonhosted.org\""),
            std::string::npos)
      << denied;
  const std::string unlisted = Exchange("GET http://evil.com/x HTTP/1.1\r\nHost: evil.com\r\n\r\n");
  EXPECT_NE(unlisted.find("pool \"data\": evil.com:80 is not in the allowlist"), std::string::npos)
      << unlisted;
  const std::string port = Exchange("CONNECT pypi.org:8443 HTTP/1.1\r\n\r\n");
  EXPECT_NE(port.find("pypi.org:8443 is not in the allowlist"), std::string::npos) << port;
  EXPECT_EQ(lookups_.load(), 0);
  EXPECT_EQ(server_->accepted(), 0);
  const auto event = LastConnEvent();
  EXPECT_EQ(event["status"], 403);
  EXPECT_EQ(event["verdict"], "refused");
}

TEST_F(ProxyTest, ANameThatResolvesToAPrivateAddressIsRefused) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string answer = Exchange("CONNECT internal.example.com:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403")) << answer;
  EXPECT_NE(answer.find("resolves to 10.1.2.3, a private address"), std::string::npos) << answer;
  EXPECT_EQ(lookups_.load(), 1);
  EXPECT_EQ(server_->accepted(), 0);
}

TEST_F(ProxyTest, ARawAddressNeedsAnAddressEntry) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string refused = Exchange("CONNECT 203.0.113.7:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 403")) << refused;
  EXPECT_NE(refused.find("an address needs an address or CIDR entry"), std::string::npos)
      << refused;
  const std::string loopback = Exchange("GET http://127.0.0.1:8080/ HTTP/1.1\r\n\r\n");
  EXPECT_NE(loopback.find("loopback: never reachable"), std::string::npos) << loopback;

  SetPolicy("127.0.0.1", "data", R"({"mode":"allowlist","allow":["203.0.113.0/24:443"]})");
  const std::string tunnel = ClientHello("");  // an address target may go without SNI
  const std::string allowed = Exchange("CONNECT 203.0.113.7:443 HTTP/1.1\r\n\r\n" + tunnel);
  EXPECT_EQ(allowed, kEstablished + tunnel);
  EXPECT_EQ(lookups_.load(), 0);
}

TEST_F(ProxyTest, AnUnknownSourceIs403) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string answer = Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n", "127.0.0.2");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403 Forbidden\r\n")) << answer;
  EXPECT_NE(answer.find("unknown sandbox"), std::string::npos) << answer;
  EXPECT_EQ(lookups_.load(), 0);
  const auto event = LastConnEvent();
  EXPECT_EQ(event["addr"], "127.0.0.2");
  EXPECT_TRUE(event["pool"].is_null());
}

TEST_F(ProxyTest, OtherTargetFormsAre400SayingWhatToSend) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string origin = Exchange("GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n");
  EXPECT_TRUE(origin.starts_with("HTTP/1.1 400 Bad Request\r\n")) << origin;
  EXPECT_NE(origin.find("CONNECT host:port"), std::string::npos) << origin;
  const std::string https = Exchange("GET https://pypi.org/ HTTP/1.1\r\n\r\n");
  EXPECT_NE(https.find("CONNECT host:443"), std::string::npos) << https;
}

TEST_F(ProxyTest, APlainRequestIsSentWithItsOwnHeadAndTheResponseCloses) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string answer = Exchange(
      "POST http://pypi.org/simple/x?y=1 HTTP/1.1\r\nHost: other.example\r\n"
      "Proxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\n"
      "Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nX-Custom: kept\r\n"
      "Content-Length: 4\r\n\r\nabcd");
  EXPECT_EQ(answer, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
      << answer;
  ASSERT_EQ(Received().size(), 1U);
  EXPECT_EQ(Received()[0],
            "POST /simple/x?y=1 HTTP/1.1\r\nHost: pypi.org\r\nX-Custom: kept\r\n"
            "Content-Length: 4\r\nConnection: close\r\n\r\nabcd");
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["status"], 200);
  EXPECT_EQ(event["method"], "POST");
}

TEST_F(ProxyTest, ConnectionsPerSourceAreLimited) {
  StopProxy();
  options_.max_connections_per_source = 2;
  Start();
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  SetPolicy("127.0.0.2", "other", kPypiPolicy);
  Fd first = Connect();
  Fd second = Connect();
  ASSERT_TRUE(SendAll(first.get(), "CONNECT pypi.org:443 HTTP/1.1\r\n"));  // heads not ended
  ASSERT_TRUE(SendAll(second.get(), "CONNECT pypi.org:443 HTTP/1.1\r\n"));
  while (proxy_->stats().open < 2) std::this_thread::sleep_for(5ms);
  const std::string third = Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(third.starts_with("HTTP/1.1 429 Too Many Requests\r\n")) << third;
  EXPECT_NE(third.find("(2)"), std::string::npos) << third;
  // Another sandbox is not held back by this one.
  const std::string other = Exchange("CONNECT evil.com:443 HTTP/1.1\r\n\r\n", "127.0.0.2");
  EXPECT_NE(other.find("pool \"other\""), std::string::npos) << other;
  // A closed connection makes room again.
  first.Reset();
  while (proxy_->stats().open > 1) std::this_thread::sleep_for(5ms);
  const std::string again = Exchange("CONNECT evil.com:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(again.starts_with("HTTP/1.1 403")) << again;
}

TEST_F(ProxyTest, APolicyChangeAppliesToTheNextConnection) {
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string hello = ClientHello("pypi.org");
  EXPECT_EQ(Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n" + hello), kEstablished + hello);
  SetPolicy("127.0.0.1", "data", R"({"mode":"allowlist","allow":["files.pythonhosted.org"]})");
  const std::string after = Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n" + hello);
  EXPECT_NE(after.find("pypi.org:443 is not in the allowlist"), std::string::npos) << after;
  ASSERT_EQ(ApplyControlLine(table_, tls_, R"({"op":"remove","addr":"127.0.0.1"})")["ev"],
            "applied");
  const std::string removed = Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n");
  EXPECT_NE(removed.find("unknown sandbox"), std::string::npos) << removed;
  EXPECT_EQ(lookups_.load(), 1);
}

TEST_F(ProxyTest, AFailedResolutionOrConnectionIs502NamingTheTarget) {
  SetPolicy("127.0.0.1", "data", R"({"mode":"allowlist","allow":["nowhere.example:443"]})");
  const std::string answer = Exchange("CONNECT nowhere.example:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << answer;
  EXPECT_NE(answer.find("cannot resolve nowhere.example"), std::string::npos) << answer;

  route_port_ = [] {
    TestServer gone([](int) {});
    return gone.port();  // refuses connections once it is gone
  }();
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string refused = Exchange("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << refused;
  EXPECT_NE(refused.find("cannot connect to pypi.org:443 (203.0.113.10: Connection refused)"),
            std::string::npos)
      << refused;
}

TEST_F(ProxyTest, AFailedConnectTriesTheNextAllowedAddressOfTheName) {
  const RefusingPort refusing;
  {
    const std::lock_guard lock(overrides_.mutex);
    overrides_.ports["203.0.113.20"] = refusing.port();
  }
  SetPolicy("127.0.0.1", "data", R"({"mode":"allowlist","allow":["multi.example:443"]})");
  const std::string hello = ClientHello("multi.example");
  EXPECT_EQ(Exchange("CONNECT multi.example:443 HTTP/1.1\r\n\r\n" + hello), kEstablished + hello);
  auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["upstream"], "203.0.113.21");  // the private 10.1.2.3 was never tried

  {
    const std::lock_guard lock(overrides_.mutex);
    overrides_.ports["203.0.113.21"] = refusing.port();
  }
  const std::string refused = Exchange("CONNECT multi.example:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << refused;
  EXPECT_NE(refused.find("cannot connect to multi.example:443 (203.0.113.20: Connection refused; "
                         "203.0.113.21: Connection refused)"),
            std::string::npos)
      << refused;
  EXPECT_EQ(server_->accepted(), 1);
}

}  // namespace
}  // namespace sandbox::egress
