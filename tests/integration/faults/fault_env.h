// What the fault-injection tests break: a second dockerd of their own (own socket, data root,
// exec root and pid file, a bridge of its own, no iptables), so stopping or stalling it disturbs
// no one,
// with the sandbox image loaded from the main engine (docker save | docker load, once per
// machine: the data root persists under /var/tmp); and a Unix-socket proxy (engine_proxy.py)
// that slows down or stalls the engine's answers.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/server/server_process.h"
#include "sandbox/docker/client.h"
#include "support/engine_fixture.h"

namespace sandbox::testing {

inline std::string FaultEngineDir() {
  const char* dir = std::getenv("SANDBOX_FAULTS_ENGINE_DIR");
  return dir != nullptr ? dir : "/var/tmp/sandbox-mcp-faults-engine";
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::string Capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The second dockerd's bridge interface (see Start).
inline constexpr const char* kFaultBridge = "sbxfault0";

// One dockerd the tests own. Not thread-safe: the test thread drives it.
class SecondEngine {
 public:
  SecondEngine() : dir_(FaultEngineDir()) {
    std::filesystem::create_directories(dir_);
    // One test process at a time uses the directory.
    lock_fd_ = ::open((dir_ + "/lock").c_str(), O_CREAT | O_RDWR, 0600);
    if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX);
    StopStale();
  }
  ~SecondEngine() {
    Stop();
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }
  SecondEngine(const SecondEngine&) = delete;
  SecondEngine& operator=(const SecondEngine&) = delete;

  std::string socket() const { return dir_ + "/docker.sock"; }
  std::string host() const { return "unix://" + socket(); }
  std::string dir() const { return dir_; }
  bool running() const { return pid_ > 0; }

  // Starts dockerd and waits until it answers (true) or 90 s passed.
  bool Start() {
    if (pid_ > 0) return true;
    // Not --bridge=none: a dockerd without a bridge deletes the interface docker0 at start-up,
    // which breaks the main engine's bridge network (every `docker build` then fails). A bridge
    // of its own, kept like the data root, leaves docker0 alone.
    const std::string bridge(kFaultBridge);
    const std::string create = "ip link show " + bridge + " >/dev/null 2>&1 || { ip link add " +
                               bridge + " type bridge && ip addr add 172.31.254.1/24 dev " +
                               bridge + "; }";
    if (std::system(create.c_str()) != 0) {
      ADD_FAILURE() << "cannot create the bridge " << bridge << " for the second dockerd";
      return false;
    }
    const std::string bridge_arg = "--bridge=" + bridge;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);  // no terminal signal of the test reaches it
      std::string log = dir_ + "/dockerd.log";
      int fd = ::open(log.c_str(), O_CREAT | O_WRONLY | O_APPEND, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::string host_arg = "--host=" + host();
      std::string data = "--data-root=" + dir_ + "/data";
      std::string exec = "--exec-root=" + dir_ + "/exec";
      std::string pidfile = "--pidfile=" + dir_ + "/docker.pid";
      ::execlp("dockerd", "dockerd", host_arg.c_str(), data.c_str(), exec.c_str(), pidfile.c_str(),
               bridge_arg.c_str(), "--iptables=false", "--ip-masq=false", "--ip-forward=false",
               "--shutdown-timeout=2", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return WaitFor([&] { return Ping(); }, std::chrono::seconds(90));
  }

  // SIGTERM and wait: dockerd stops its containers (2 s grace) and exits.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  bool Ping() const {
    return Capture("curl -s --max-time 2 --unix-socket " + socket() + " http://d/_ping") == "OK";
  }

  // The sandbox image as the main engine has it: loaded when missing or different.
  bool EnsureImage(const std::string& image) const {
    const std::string format = " image inspect --format '{{.Id}}' " + image + " 2>/dev/null";
    const std::string want = Capture("docker" + format);
    if (want.empty()) return false;
    if (Capture("docker -H " + host() + format) == want) return true;
    const auto began = std::chrono::steady_clock::now();
    const int rc =
        std::system(("docker save " + image + " | docker -H " + host() + " load -q").c_str());
    std::fprintf(stderr, "[faults] loaded %s into the second engine in %.1f s\n", image.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    return rc == 0 && Capture("docker -H " + host() + format) == want;
  }

  // The docker CLI against this engine, e.g. Cli("pause ID").
  int Cli(const std::string& args) const {
    return std::system(("docker -H " + host() + " " + args + " >/dev/null 2>&1").c_str());
  }

 private:
  // A dockerd a killed earlier test run left behind on this directory.
  void StopStale() {
    const std::string pidfile = dir_ + "/docker.pid";
    std::string text = ReadText(pidfile);
    if (text.empty()) return;
    pid_t stale = static_cast<pid_t>(std::atoi(text.c_str()));
    const std::string cmdline = ReadText("/proc/" + std::to_string(stale) + "/cmdline");
    if (stale > 0 && cmdline.find(dir_) != std::string::npos) {
      ::kill(stale, SIGTERM);
      WaitFor([&] { return ::kill(stale, 0) != 0; }, std::chrono::seconds(30));
    }
    std::remove(pidfile.c_str());
  }

  std::string dir_;
  int lock_fd_ = -1;
  pid_t pid_ = -1;
};

// engine_proxy.py between a listening socket and the second engine; SetMode() switches it.
class EngineProxy {
 public:
  EngineProxy(const std::string& upstream, const std::string& dir)
      : socket_(dir + "/proxy.sock"), mode_file_(dir + "/proxy.mode") {
    SetMode("pass");
    const std::string script = SourceDir() + "/tests/integration/faults/engine_proxy.py";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execlp("python3", "python3", script.c_str(), socket_.c_str(), upstream.c_str(),
               mode_file_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    WaitFor([&] { return std::filesystem::exists(socket_); }, std::chrono::seconds(20));
  }
  ~EngineProxy() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::remove(socket_.c_str());
    std::remove(mode_file_.c_str());
  }
  EngineProxy(const EngineProxy&) = delete;
  EngineProxy& operator=(const EngineProxy&) = delete;

  std::string host() const { return "unix://" + socket_; }
  // "pass", "delay MS" or "stall"; the proxy reads it within 50 ms.
  void SetMode(const std::string& mode) {
    std::ofstream(mode_file_ + ".new") << mode << "\n";
    std::filesystem::rename(mode_file_ + ".new", mode_file_);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }

 private:
  std::string socket_;
  std::string mode_file_;
  pid_t pid_ = -1;
};

// Threads of a process, from /proc/PID/status.
inline int ThreadCount(pid_t pid) {
  std::istringstream in(ReadText("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

}  // namespace sandbox::testing
