// A sandbox-mcp process for tests of the server binary (SANDBOX_MCP_BIN): started with a
// temporary --config of its own instance id, on a free loopback port, stopped (SIGTERM) by the
// destructor.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace sandbox::testing {

inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline bool WaitFor(const std::function<bool()>& condition, std::chrono::seconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return condition();
}

// How to start the process beyond its configuration.
struct ProcessOptions {
  std::string log_level = "warn";
  std::vector<std::string> extra_args;  // e.g. {"--log-format", "json"}
  std::string stderr_path;              // the log goes there ("" = the test's own stderr)
};

class ServerProcess {
 public:
  // `config_json`: the --config file's members after instance_id, e.g. "\"pools\": [...]".
  ServerProcess(const std::string& instance, int port, const std::string& config_json,
                const ProcessOptions& options = {})
      : port_(port), instance_(instance) {
    config_path_ = ::testing::TempDir() + "/server-" + instance + ".json";
    WriteConfig(config_json);
    const char* bin = std::getenv("SANDBOX_MCP_BIN");
    EXPECT_NE(bin, nullptr);
    std::string listen = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> args = {
        bin == nullptr ? "" : bin, "--listen", listen, "--config", config_path_, "--log-level",
        options.log_level};
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    if (bin == nullptr) return;  // the failure above says why; nothing to start
    pid_ = ::fork();
    if (pid_ == 0) {
      if (!options.stderr_path.empty()) {
        const int fd = ::open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) ::dup2(fd, STDERR_FILENO);
      }
      ::execv(bin, argv.data());
      ::_exit(127);
    }
  }

  // Replaces the --config file's members (instance_id stays), e.g. before a SIGHUP.
  void WriteConfig(const std::string& config_json) const {
    std::ofstream(config_path_) << R"({"instance_id": ")" << instance_ << R"(", )" << config_json
                                << "}";
  }
  // Replaces the whole --config file, e.g. with one that is not valid.
  void WriteRawConfig(const std::string& text) const { std::ofstream(config_path_) << text; }
  ~ServerProcess() { Stop(SIGTERM); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // True once /healthz answers 200 and the default pool has at least `idle` idle sandboxes.
  bool Ready(int idle = 1) const {
    httplib::Client client("127.0.0.1", port_);
    auto res = client.Get("/healthz");
    if (!res || res->status != 200) return false;
    auto body = nlohmann::json::parse(res->body, nullptr, false);
    return !body.is_discarded() && body["pools"][0].value("idle", 0) >= idle;
  }

  // Signals the server and waits for it; returns its wait status (-1 if it was not running).
  int Stop(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    std::remove(config_path_.c_str());
    return status;
  }

 private:
  int port_;
  std::string instance_;
  pid_t pid_ = -1;
  std::string config_path_;
};

}  // namespace sandbox::testing
