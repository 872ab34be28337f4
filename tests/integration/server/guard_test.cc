// The server binary's connection guard (server.max_header_bytes, max_headers, header_timeout_s,
// max_body_bytes, ...): 300 idle and 300 trickling connections hold no HTTP worker, so a new
// client's print(1) still runs, and the server's threads and memory do not grow with them;
// heads and bodies over the limits are refused with JSON bodies that name the limit; the server
// listens on no TCP port but its public one, and its internal hop (a Unix socket) refuses every
// other user's connection. Needs the engine and the image (one warm sandbox for print(1)).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/server/server_process.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using sandbox::testing::FreePort;
using sandbox::testing::WaitFor;
using std::chrono::seconds;

constexpr int kIdle = 300;
constexpr int kTrickling = 300;

// A raw connection from a chosen loopback address (the attacker's is not the new client's).
class Raw {
 public:
  Raw(int port, const char* from) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{60, 0};  // a read that never completes fails the test instead of hanging
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, from, &local.sin_addr);
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Raw() { ::close(fd_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  bool connected() const { return bound_ && connected_; }
  bool Send(const std::string& data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Whether the server has sent something (or closed): then trickling stops.
  bool Readable() const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  // Everything until the server closes (or the read timeout).
  std::string ReadAll() {
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool bound_ = false;
  bool connected_ = false;
};

struct ProcStatus {
  long threads = 0;
  long rss_kib = 0;
};

ProcStatus StatusOf(int pid) {
  ProcStatus status;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("Threads:")) status.threads = std::stol(line.substr(8));
    if (line.starts_with("VmRSS:")) status.rss_kib = std::stol(line.substr(6));
  }
  return status;
}

nlohmann::json JsonBody(const std::string& response) {
  const auto at = response.find("\r\n\r\n");
  if (at == std::string::npos) return nullptr;
  return nlohmann::json::parse(response.substr(at + 4), nullptr, false);
}

class ServerGuardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<sandbox::testing::ServerProcess>(
        sandbox::testing::TestInstanceId("guard"), FreePort(),
        R"("pools": [{"name": "default", "min_idle": 1, "max_total": 2}])");
    ASSERT_TRUE(WaitFor([] { return server_->Ready(/*idle=*/1); }, seconds(180)));
  }
  static void TearDownTestSuite() { server_.reset(); }

  static std::string Exchange(const std::string& request) {
    Raw client(server_->port(), "127.0.0.1");
    EXPECT_TRUE(client.connected());
    client.Send(request);
    return client.ReadAll();
  }

  static std::unique_ptr<sandbox::testing::ServerProcess> server_;
};

std::unique_ptr<sandbox::testing::ServerProcess> ServerGuardTest::server_;

// print(1) through /v1/execute; returns the latency, or a negative value on failure.
double RunPrintOne(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  client.set_connection_timeout(60, 0);
  const auto start = std::chrono::steady_clock::now();
  auto res = client.Post("/v1/execute", R"x({"code": "print(1)"})x", "application/json");
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(res) << httplib::to_string(res.error());
  if (!res) return -1;
  EXPECT_EQ(res->status, 200) << res->body;
  auto body = nlohmann::json::parse(res->body, nullptr, false);
  EXPECT_EQ(body.value("stdout", ""), "1\n") << res->body;
  return ms;
}

TEST_F(ServerGuardTest, IdleAndTricklingConnectionsHoldNoWorkerNorGrowTheServer) {
  RunPrintOne(server_->port());  // warm: the first run pays one-time costs
  ASSERT_TRUE(WaitFor([] { return server_->Ready(/*idle=*/1); }, seconds(120)));
  const double baseline_ms = RunPrintOne(server_->port());
  ASSERT_TRUE(WaitFor([] { return server_->Ready(/*idle=*/1); }, seconds(120)));
  const ProcStatus before = StatusOf(server_->pid());

  std::vector<std::unique_ptr<Raw>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<Raw>(server_->port(), "127.0.0.2"));
    ASSERT_TRUE(idle.back()->connected()) << "idle " << i;
  }
  std::vector<std::unique_ptr<Raw>> trickling;
  for (int i = 0; i < kTrickling; ++i) {
    trickling.push_back(std::make_unique<Raw>(server_->port(), "127.0.0.3"));
    ASSERT_TRUE(trickling.back()->connected()) << "trickling " << i;
  }
  // A byte every 2 s on each trickling connection, until the server answers it.
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::atomic<bool> stop{false};
  std::thread trickler([&] {
    for (std::size_t at = 0; !stop.load() && at < head.size(); ++at) {
      for (auto& conn : trickling) {
        if (!conn->Readable()) conn->Send(head.substr(at, 1));
      }
      for (int i = 0; i < 20 && !stop.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
  std::this_thread::sleep_for(seconds(3));  // every connection accepted and trickling

  const double loaded_ms = RunPrintOne(server_->port());
  const ProcStatus during = StatusOf(server_->pid());
  std::cout << "print(1) via /v1/execute: " << baseline_ms << " ms alone, " << loaded_ms
            << " ms with " << kIdle << " idle and " << kTrickling << " trickling connections open\n"
            << "server threads " << before.threads << " -> " << during.threads << ", RSS "
            << before.rss_kib << " -> " << during.rss_kib << " KiB\n";
  EXPECT_GT(loaded_ms, 0);
  // No thread per connection (a few come and go with the pools); a head buffer each at most.
  EXPECT_LE(during.threads, before.threads + 8);
  EXPECT_LT(during.rss_kib - before.rss_kib, 64 * 1024);

  // The trickling heads pass server.header_timeout_s (10 s): each gets 408 with a JSON body.
  int timed_out = 0;
  std::string sample;
  for (auto& conn : trickling) {
    const std::string response = conn->ReadAll();
    if (response.rfind("HTTP/1.1 408", 0) == 0 &&
        JsonBody(response)["error"]["data"]["limit"] == "server.header_timeout_s") {
      ++timed_out;
    } else if (sample.empty()) {
      sample = response;
    }
  }
  stop.store(true);
  trickler.join();
  EXPECT_EQ(timed_out, kTrickling) << sample;
}

// The inodes of the sockets a process holds (/proc/<pid>/fd links "socket:[N]").
std::set<std::string> SocketInodes(int pid) {
  std::set<std::string> inodes;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code error;
    const std::string target = std::filesystem::read_symlink(fd.path(), error).string();
    if (!error && target.starts_with("socket:[")) {
      inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  return inodes;
}

// Local ports of listening TCP sockets (IPv4 and IPv6) among `inodes`.
std::set<int> ListeningTcpPorts(const std::set<std::string>& inodes) {
  std::set<int> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A" && inodes.contains(inode)) {
        ports.insert(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
      }
    }
  }
  return ports;
}

// Paths of listening Unix sockets among `inodes`.
std::vector<std::string> ListeningUnixPaths(const std::set<std::string>& inodes) {
  std::vector<std::string> paths;
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, inode, path;
    fields >> num >> refs >> protocol >> flags >> type >> state >> inode >> path;
    // Flags 00010000: __SO_ACCEPTCON, a listening socket.
    if (flags == "00010000" && inodes.contains(inode) && !path.empty()) paths.push_back(path);
  }
  return paths;
}

// Issue 34: cpp-httplib's internal loopback port answered anyone (403 after reading the whole
// header), and 340 local connections trickling to it made /healthz time out. Now the server
// listens on no TCP port but its public one; the hop is a Unix socket in a private directory,
// and another user's 340 connections to it are each refused by the kernel, before any byte.
TEST_F(ServerGuardTest, NoTcpPortButThePublicOneAndTheInternalHopRefusesOtherUsers) {
  const std::set<std::string> inodes = SocketInodes(server_->pid());
  ASSERT_FALSE(inodes.empty());
  EXPECT_EQ(ListeningTcpPorts(inodes), std::set<int>{server_->port()});
  const std::vector<std::string> unix_paths = ListeningUnixPaths(inodes);
  ASSERT_EQ(unix_paths.size(), 1u) << "the internal socket";
  const std::string path = unix_paths[0];
  const std::string dir = path.substr(0, path.rfind('/'));
  struct stat dir_stat {};
  ASSERT_EQ(::stat(dir.c_str(), &dir_stat), 0) << dir;
  EXPECT_EQ(dir_stat.st_mode & 0777, 0700u) << dir;
  struct stat sock_stat {};
  ASSERT_EQ(::stat(path.c_str(), &sock_stat), 0) << path;
  EXPECT_EQ(sock_stat.st_mode & 0777, 0600u) << path;

  // Another user (nobody) tries 340 connections: each is refused with EACCES. (The test runs
  // as root, whom permissions do not stop; root can read the server's memory anyway.)
  if (::geteuid() == 0 && dir_stat.st_uid == 0) {
    const pid_t child = ::fork();
    if (child == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::memcpy(addr.sun_path, path.data(), path.size());
      for (int i = 0; i < 340; ++i) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
        const int error = errno;
        ::close(fd);
        if (rc == 0 || error != EACCES) ::_exit(3);
      }
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "2: could not become nobody; 3: a connection was not "
                                         "refused with EACCES";
  }
  // The server still answers.
  httplib::Client client("127.0.0.1", server_->port());
  auto res = client.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(ServerGuardTest, OversizedHeadsGet431Or414WithJsonNamingTheLimit) {
  std::string big = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 8; ++i)
    big += "X-Big-" + std::to_string(i) + ": " + std::string(6000, 'a') + "\r\n";
  const std::string too_big = Exchange(big + "\r\n");
  EXPECT_EQ(too_big.rfind("HTTP/1.1 431", 0), 0u) << too_big;
  EXPECT_EQ(JsonBody(too_big)["error"]["data"]["limit"], "server.max_header_bytes") << too_big;

  const std::string line = Exchange(
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Line: " + std::string(9000, 'a') + "\r\n\r\n");
  EXPECT_EQ(line.rfind("HTTP/1.1 431", 0), 0u) << line;
  EXPECT_EQ(JsonBody(line)["error"]["data"]["limit"], "max_header_line") << line;

  std::string many = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  const std::string too_many = Exchange(many + "\r\n");
  EXPECT_EQ(too_many.rfind("HTTP/1.1 431", 0), 0u) << too_many;
  EXPECT_EQ(JsonBody(too_many)["error"]["data"]["limit"], "server.max_headers") << too_many;
  EXPECT_NE(JsonBody(too_many)["error"]["message"].get<std::string>().find("100"),
            std::string::npos);

  const std::string uri =
      Exchange("GET /healthz?" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(uri.rfind("HTTP/1.1 414", 0), 0u) << uri;
  EXPECT_EQ(JsonBody(uri)["error"]["data"]["limit"], "max_request_line") << uri;
}

TEST_F(ServerGuardTest, ANineMegabyteBodyGets413NamingTheLimit) {
  httplib::Client client("127.0.0.1", server_->port());
  client.set_read_timeout(60, 0);
  auto res = client.Post("/v1/execute", std::string(9 << 20, 'x'), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 413);
  auto body = nlohmann::json::parse(res->body, nullptr, false);
  EXPECT_EQ(body["error"]["data"]["limit"], "server.max_body_bytes") << res->body;
  EXPECT_NE(body["error"]["message"].get<std::string>().find("8388608"), std::string::npos);
}

TEST_F(ServerGuardTest, RefusalsThatCppHttplibMakesItselfHaveJsonBodies) {
  const std::string missing =
      Exchange("GET /no-such-route HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(missing.rfind("HTTP/1.1 404", 0), 0u) << missing;
  EXPECT_NE(JsonBody(missing)["error"]["message"].get<std::string>().find("/no-such-route"),
            std::string::npos)
      << missing;
  const std::string chunked = Exchange(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  EXPECT_EQ(chunked.rfind("HTTP/1.1 411", 0), 0u) << chunked;
  EXPECT_TRUE(JsonBody(chunked)["error"].is_object()) << chunked;
}

}  // namespace
}  // namespace sandbox
