// Hermetic transport tests: parsing, error mapping, and deadline/unreachable behaviour against
// local Unix sockets this test creates (no Docker engine involved).
#include "sandbox/docker/transport.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>

namespace sandbox::docker {
namespace {

using namespace std::chrono_literals;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(EndpointTest, DefaultIsTheUnixSocket) {
  auto e = ParseEndpoint(TransportOptions{});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->socket_path, "/var/run/docker.sock");
  EXPECT_EQ(e->base_url, "http://docker");
}

TEST(EndpointTest, TcpWithAndWithoutTls) {
  TransportOptions o;
  o.host = "tcp://engine.example:2376";
  auto plain = ParseEndpoint(o);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->base_url, "http://engine.example:2376");
  EXPECT_TRUE(plain->socket_path.empty());
  o.tls = TlsOptions{"ca.pem", "cert.pem", "key.pem", true};
  auto tls = ParseEndpoint(o);
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->base_url, "https://engine.example:2376");
}

TEST(EndpointTest, BadHosts) {
  for (const char* host : {"tcp://nohostport", "unix://relative", "tcp://h:1/path", ""}) {
    TransportOptions o;
    o.host = host;
    EXPECT_FALSE(ParseEndpoint(o).ok()) << host;
  }
  TransportOptions ssh;
  ssh.host = "ssh://user@host";
  auto e = ParseEndpoint(ssh);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::kUnsupported);
  TransportOptions unix_tls;
  unix_tls.tls = TlsOptions{};
  EXPECT_FALSE(ParseEndpoint(unix_tls).ok());
}

TEST(EnvTest, DockerConventions) {
  auto none = TransportOptionsFromEnv(Env({}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->host, "unix:///var/run/docker.sock");
  EXPECT_FALSE(none->tls.has_value());

  auto unix_host = TransportOptionsFromEnv(Env({{"DOCKER_HOST", "unix:///tmp/d.sock"}}));
  ASSERT_TRUE(unix_host.ok());
  EXPECT_EQ(unix_host->host, "unix:///tmp/d.sock");

  auto tls = TransportOptionsFromEnv(Env({{"DOCKER_HOST", "tcp://h:2376"},
                                          {"DOCKER_TLS_VERIFY", "1"},
                                          {"DOCKER_CERT_PATH", "/certs"}}));
  ASSERT_TRUE(tls.ok());
  ASSERT_TRUE(tls->tls.has_value());
  EXPECT_EQ(tls->tls->ca_file, "/certs/ca.pem");
  EXPECT_EQ(tls->tls->cert_file, "/certs/cert.pem");
  EXPECT_EQ(tls->tls->key_file, "/certs/key.pem");
  EXPECT_TRUE(tls->tls->verify);

  auto home = TransportOptionsFromEnv(
      Env({{"DOCKER_HOST", "tcp://h:2376"}, {"DOCKER_TLS_VERIFY", "1"}, {"HOME", "/root"}}));
  ASSERT_TRUE(home.ok());
  EXPECT_EQ(home->tls->ca_file, "/root/.docker/ca.pem");

  auto no_verify = TransportOptionsFromEnv(
      Env({{"DOCKER_HOST", "tcp://h:2376"}, {"DOCKER_CERT_PATH", "/certs"}}));
  ASSERT_TRUE(no_verify.ok());
  ASSERT_TRUE(no_verify->tls.has_value());
  EXPECT_FALSE(no_verify->tls->verify);
}

TEST(ErrorFromResponseTest, MapsStatusAndKeepsDockersMessage) {
  Error nf = ErrorFromResponse(404, R"({"message":"No such image: nope:latest"})", "create");
  EXPECT_EQ(nf.code(), ErrorCode::kNotFound);
  EXPECT_EQ(nf.http_status(), 404);
  EXPECT_EQ(nf.message(), "create: No such image: nope:latest");

  Error conflict = ErrorFromResponse(409, R"({"message":"name in use"})", "create");
  EXPECT_EQ(conflict.code(), ErrorCode::kConflict);

  Error engine = ErrorFromResponse(500, R"({"message":"rootfs is marked read-only"})", "put");
  EXPECT_EQ(engine.code(), ErrorCode::kEngine);
  EXPECT_EQ(engine.http_status(), 500);
  EXPECT_NE(engine.ToString().find("HTTP 500"), std::string::npos);

  Error text = ErrorFromResponse(400, "plain text\n", "");
  EXPECT_EQ(text.message(), "plain text");
  Error empty = ErrorFromResponse(502, "", "x");
  EXPECT_EQ(empty.message(), "x: HTTP status 502");
}

TEST(ResponseHeadTest, UpgradeHeadAndTrailingStreamBytes) {
  std::string buf =
      "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
      "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n";
  buf += std::string("\x01\x00\x00\x00", 4);
  auto partial = ParseResponseHead(std::string_view(buf).substr(0, 30));
  ASSERT_TRUE(partial.ok());
  EXPECT_FALSE(partial->has_value());
  auto head = ParseResponseHead(buf);
  ASSERT_TRUE(head.ok());
  ASSERT_TRUE(head->has_value());
  EXPECT_EQ((*head)->status, 101);
  EXPECT_EQ((*head)->headers.at("upgrade"), "tcp");
  EXPECT_EQ((*head)->headers.at("content-type"), "application/vnd.docker.raw-stream");
  EXPECT_EQ(buf.size() - (*head)->length, 4u);
}

TEST(ResponseHeadTest, NotHttp) {
  EXPECT_FALSE(ParseResponseHead("SSH-2.0-OpenSSH\r\n").ok());
  EXPECT_FALSE(ParseResponseHead("HTTP/1.1 abc\r\n\r\n").ok());
}

// A listening Unix socket in a temporary directory that never answers.
class SilentServer {
 public:
  SilentServer() {
    dir_ = std::filesystem::temp_directory_path() /
           ("docker-transport-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "s.sock").string();
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    ::unlink(path_.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd_, 8) != 0) {
      ADD_FAILURE() << "cannot listen on " << path_;
    }
  }
  ~SilentServer() {
    ::close(fd_);
    std::filesystem::remove_all(dir_);
  }
  const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
  int fd_ = -1;
};

TEST(TransportTest, UnreachableSocketIsUnavailable) {
  CurlGlobal curl;
  TransportOptions o;
  o.host = "unix:///nonexistent/dir/docker.sock";
  auto t = Transport::Create(curl, o);
  ASSERT_TRUE(t.ok());
  HttpRequest req;
  req.target = "/_ping";
  req.deadline = DeadlineAfter(2s);
  auto r = (*t)->Perform(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable) << r.error().ToString();
  EXPECT_NE(r.error().message().find("/nonexistent/dir/docker.sock"), std::string::npos);
}

TEST(TransportTest, DeadlineIsEnforcedWhenTheEngineHangs) {
  CurlGlobal curl;
  SilentServer server;
  TransportOptions o;
  o.host = "unix://" + server.path();
  auto t = Transport::Create(curl, o);
  ASSERT_TRUE(t.ok());
  HttpRequest req;
  req.target = "/_ping";
  auto start = Clock::now();
  req.deadline = start + 300ms;
  auto r = (*t)->Perform(req);
  auto took = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kTimeout) << r.error().ToString();
  EXPECT_LT(took, 2s);
  EXPECT_GE(took, 250ms);

  req.deadline = Clock::now() - 1ms;
  auto late = (*t)->Perform(req);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), ErrorCode::kTimeout);
}

}  // namespace
}  // namespace sandbox::docker
