// FakeEngine: a one-connection HTTP server on a Unix socket in a temporary directory, scripted by
// the test, so hijack/streaming code can be tested without Docker.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

namespace sandbox::docker::testing {

class FakeEngine {
 public:
  // `script` runs on the server thread with the accepted connection's fd and the request head.
  using Script = std::function<void(int fd, const std::string& request_head)>;

  explicit FakeEngine(Script script) {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("fake-engine-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "docker.sock").string();
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 4);
    thread_ = std::thread([this, script = std::move(script)] {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::string head;
      char c;
      while (head.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1) head += c;
      request_ = head;
      script(fd, head);
      ::close(fd);
    });
  }

  ~FakeEngine() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
    std::filesystem::remove_all(dir_);
  }

  std::string host() const { return "unix://" + path_; }
  // The request head the server received (valid after the script ran).
  const std::string& request() const { return request_; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  static void Send(int fd, const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }

  // Reads until the peer half-closes.
  static std::string ReadToEof(int fd) {
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  std::filesystem::path dir_;
  std::string path_;
  int listen_fd_ = -1;
  std::string request_;
  std::thread thread_;
};

inline std::string Frame(unsigned char type, const std::string& payload) {
  auto n = static_cast<std::uint32_t>(payload.size());
  std::string h = {static_cast<char>(type),
                   '\0',
                   '\0',
                   '\0',
                   static_cast<char>(n >> 24),
                   static_cast<char>((n >> 16) & 0xFF),
                   static_cast<char>((n >> 8) & 0xFF),
                   static_cast<char>(n & 0xFF)};
  return h + payload;
}

}  // namespace sandbox::docker::testing
