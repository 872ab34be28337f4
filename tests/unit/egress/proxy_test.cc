// The egress proxy end to end on loopback (proxy.h), behind it a plain test server
// (proxy_fixture.h): decisions, refusals, tunnels and plain requests. Credentials and the TLS
// they need: proxy_tls_test.cc.
#include "egress/proxy.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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
#include "unit/egress/proxy_fixture.h"

namespace sandbox::egress {
namespace {

using namespace std::chrono_literals;

class ProxyTest : public ProxyFixture {
 protected:
  // The test server: echoes a tunnel's bytes; answers a plain request with "hello" (but a GET
  // of /slow never: it waits for the proxy to close).
  void Serve(int fd) override {
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
    if (request.starts_with("GET /slow ")) {
      ReadToEof(fd);
      return;
    }
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello");
  }

  std::vector<std::string> Received() {
    const std::lock_guard lock(mutex_);
    return received_;
  }

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

TEST_F(ProxyTest, ATunnelIsCutAtTheByteLimit) {
  StopProxy();
  options_.max_conn_bytes = 100'000;
  Start();
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  Fd fd = Connect();
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT pypi.org:443 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(ReadBytes(fd.get(), sizeof(kEstablished) - 1), kEstablished);
  const std::string tunnel = ClientHello("pypi.org") + std::string(1'000'000, 'x');
  std::thread writer([&] { SendAll(fd.get(), tunnel); });  // fails once the proxy cuts it
  const std::string echoed = ReadToEof(fd.get());
  ::shutdown(fd.get(), SHUT_RDWR);
  writer.join();
  EXPECT_LT(echoed.size(), tunnel.size());
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["cut"], "bytes");
  EXPECT_NE(event["reason"].get<std::string>().find(
                "the connection reached the proxy's limit of 100000 bytes (--max-conn-bytes)"),
            std::string::npos)
      << event.dump();
  const auto carried =
      event["bytes_up"].get<std::uint64_t>() + event["bytes_down"].get<std::uint64_t>();
  EXPECT_GT(carried, 100'000U);
  EXPECT_LT(carried, tunnel.size());
  EXPECT_EQ(proxy_->stats().cut_bytes, 1U);
  EXPECT_EQ(StatsJson(proxy_->stats())["cut_bytes"], 1);
}

TEST_F(ProxyTest, APlainRequestBodyOverTheByteLimitIs413) {
  StopProxy();
  options_.max_conn_bytes = 100'000;
  Start();
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  Fd fd = Connect();
  const std::string body(1'000'000, 'b');
  std::thread writer([&] {
    SendAll(fd.get(), "POST http://pypi.org/up HTTP/1.1\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  const std::string answer = ReadToEof(fd.get());
  ::shutdown(fd.get(), SHUT_RDWR);
  writer.join();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413 ")) << answer;
  EXPECT_NE(answer.find("limit of 100000 bytes (--max-conn-bytes)"), std::string::npos) << answer;
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["status"], 413);
  EXPECT_EQ(event["cut"], "bytes");
}

TEST_F(ProxyTest, ATunnelIsCutAtTheTimeLimit) {
  StopProxy();
  options_.max_conn_time = 1s;
  Start();
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  Fd fd = Connect();
  ASSERT_TRUE(SendAll(fd.get(), "CONNECT pypi.org:443 HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(ReadBytes(fd.get(), sizeof(kEstablished) - 1), kEstablished);
  const std::string hello = ClientHello("pypi.org");
  ASSERT_TRUE(SendAll(fd.get(), hello));
  EXPECT_EQ(ReadBytes(fd.get(), hello.size()), hello);
  EXPECT_EQ(ReadToEof(fd.get()), "");  // the tunnel stays open, silent, until the proxy cuts it
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["cut"], "time");
  EXPECT_NE(event["reason"].get<std::string>().find(
                "the connection reached the proxy's limit of 1000 ms (--max-conn-time-ms)"),
            std::string::npos)
      << event.dump();
  EXPECT_EQ(proxy_->stats().cut_time, 1U);
}

TEST_F(ProxyTest, APlainRequestNotAnsweredWithinTheTimeLimitIs504) {
  StopProxy();
  options_.max_conn_time = 1s;
  Start();
  SetPolicy("127.0.0.1", "data", kPypiPolicy);
  const std::string answer = Exchange("GET http://pypi.org/slow HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 504 ")) << answer;
  EXPECT_NE(answer.find("limit of 1000 ms (--max-conn-time-ms)"), std::string::npos) << answer;
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["status"], 504);
  EXPECT_EQ(event["cut"], "time");
  const auto counters = ApplyControlLine(table_, tls_, R"({"op":"counters","id":3})",
                                         [this] { return StatsJson(proxy_->stats()); });
  EXPECT_EQ(counters["ev"], "counters") << counters.dump();
  EXPECT_EQ(counters["id"], 3);
  EXPECT_EQ(counters["cut_time"], 1);
  EXPECT_EQ(counters["allowed"], 1);
  EXPECT_EQ(counters["accepted"], 1);
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
