// The egress proxy on loopback, for its tests (proxy_test.cc, proxy_tls_test.cc): a client
// connects from 127.0.0.1 (or 127.0.0.2, a second sandbox), and every connection the policy
// allows goes to a loopback test server through a fake Upstream (the policy itself never allows
// loopback, rightly). The fake resolver counts its calls: a refused name must never reach it.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "egress/control.h"
#include "egress/event_sink.h"
#include "egress/policy_table.h"
#include "egress/proxy.h"
#include "egress/socket_address.h"
#include "egress/tls_authority.h"
#include "egress/upstream.h"
#include "sandbox/core/unique_fd.h"

namespace sandbox::egress {

inline config::IpAddress Ip(const char* text) { return *config::ParseIpAddress(text); }

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

inline void SetTimeouts(int fd) {
  // A hang fails the test instead of holding it (never an assertion on time).
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

inline bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads until `done` says so, EOF or an error.
inline std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done) {
  std::string got;
  char buf[4096];
  while (!done(got)) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

inline std::string ReadToEof(int fd) {
  return ReadUntil(fd, [](const std::string&) { return false; });
}

inline std::string ReadBytes(int fd, std::size_t n) {
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
inline std::string ClientHello(const std::string& sni) {
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

inline constexpr char kEstablished[] = "HTTP/1.1 200 Connection established\r\n\r\n";

// The proxy with a test server behind it; a test says how the server answers (Serve).
class ProxyFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>([this](int fd) { Serve(fd); });
    route_port_ = server_->port();
    Start();
  }

  void TearDown() override {
    StopProxy();
    server_.reset();  // its threads call Serve: done while the test's object is whole
  }

  void Start() {
    events_ = std::make_unique<EventSink>([this](std::string_view line) {
      const std::lock_guard lock(mutex_);
      lines_.push_back(nlohmann::json::parse(line));
      return true;
    });
    std::map<std::string, std::vector<config::IpAddress>> names = {
        {"api.example.com", {Ip("203.0.113.30")}},
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
    while (proxy_->stats().open != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
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

  // Answers one connection the proxy made to the test server, on a thread of its own.
  virtual void Serve(int fd) = 0;

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
};

}  // namespace sandbox::egress
