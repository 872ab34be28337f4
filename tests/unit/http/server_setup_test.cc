// The server set-up (server_setup.h) on real sockets: the listen backlog, one server per port,
// TCP_NODELAY on accepted connections.
#include "sandbox/http/server_setup.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace sandbox::http {
namespace {

// httplib listens with a backlog of 5; more connections arriving before its acceptor takes
// them were dropped by the kernel (their clients retry a second or more later). BindServer
// raises the backlog: a burst of 64 connections completes while nothing accepts.
TEST(ServerSetupTest, ABurstOfConnectionsIsQueuedNotDropped) {
  httplib::Server server;
  const int port = BindServer(server, "127.0.0.1", 0);
  ASSERT_GT(port, 0);
  std::vector<int> fds;
  for (int i = 0; i < 64; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    // A dropped handshake would block connect() until the kernel gives up: fail instead.
    timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
        << "connection " << i << " was not queued";
  }
  // The acceptor then serves them (and owns the listening socket, which stop() closes).
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  // The others close at once, so no worker waits on them for a request that never comes.
  const int last = fds.back();
  fds.pop_back();
  for (int fd : fds) ::close(fd);
  std::thread acceptor([&] { server.listen_after_bind(); });
  const std::string request =
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(last, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  char buf[64] = {};
  timeval timeout{30, 0};
  ::setsockopt(last, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  EXPECT_GT(::recv(last, buf, sizeof(buf) - 1, 0), 0);
  EXPECT_EQ(std::string(buf).rfind("HTTP/1.1 200", 0), 0u) << buf;
  ::close(last);
  server.stop();
  acceptor.join();
}

// httplib's default socket options set SO_REUSEPORT: a second server bound the same port and
// the kernel split the connections between the two (MCP sessions "not found" at random).
TEST(ServerSetupTest, APortInUseDoesNotBindTwice) {
  httplib::Server first;
  const int port = BindServer(first, "127.0.0.1", 0);
  ASSERT_GT(port, 0);
  httplib::Server second;
  EXPECT_EQ(BindServer(second, "127.0.0.1", port), -1);
  first.stop();
}

// Accepted connections inherit TCP_NODELAY from the listening socket: a response's body (a
// write after its headers) does not wait for the client's delayed ACK.
// httplib's stop() before listen_after_bind() has begun did nothing, and the listen then never
// returned (a hung CI run; a SIGTERM during start-up). StopListening waits for the listen.
TEST(ServerSetupTest, AStopBeforeTheListenBeginsIsNotLost) {
  httplib::Server server;
  ASSERT_GT(BindServer(server, "127.0.0.1", 0), 0);
  std::atomic<bool> returned{false};
  auto serving = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the listen starts late
    server.listen_after_bind();
    returned.store(true);
  });
  StopListening(server, returned);
  EXPECT_EQ(serving.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the listen did not return after StopListening";
  EXPECT_TRUE(returned.load());
  if (!returned.load()) {
    server.stop();  // let the test end (the future's destructor joins)
  }
}

TEST(ServerSetupTest, AcceptedConnectionsHaveNoDelay) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  ListenSocketOptions(listener);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const int accepted = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  int nodelay = 0;
  len = sizeof(nodelay);
  ASSERT_EQ(::getsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0);
  int reuseport = 1;
  len = sizeof(reuseport);
  ASSERT_EQ(::getsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &reuseport, &len), 0);
  EXPECT_EQ(reuseport, 0);
  ::close(accepted);
  ::close(client);
  ::close(listener);
}

}  // namespace
}  // namespace sandbox::http
