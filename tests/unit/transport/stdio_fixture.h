// The stdio transport's test fixture: a StdioTransport over two pipes with the real
// run_python over a FakeService; the test writes lines and reads response lines.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "sandbox/transport/stdio_transport.h"
#include "unit/mcp/test_util.h"

namespace sandbox::transport::testing {

using json = nlohmann::json;
using sandbox::testing::FakeService;

// Runs a StdioTransport over two pipes; the test writes lines and reads response lines.
class StdioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe(to_server_), 0);
    ASSERT_EQ(pipe(from_server_), 0);
    StdioOptions options;
    options.max_message_bytes = 4096;
    transport_ = std::make_unique<StdioTransport>(dispatcher_, options, mcp::testing::NullLogger());
    server_ = std::thread([this] { transport_->Run(to_server_[0], from_server_[1]); });
  }
  void TearDown() override {
    CloseInput();
    if (server_.joinable()) server_.join();
    close(to_server_[0]);
    close(from_server_[0]);
    close(from_server_[1]);
  }
  void CloseInput() {
    if (to_server_[1] >= 0) close(to_server_[1]);
    to_server_[1] = -1;
  }
  void WriteRaw(const std::string& text) {
    ASSERT_EQ(write(to_server_[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void WriteLine(const json& message) { WriteRaw(message.dump() + "\n"); }
  // Reads one line (30 s at most; an empty json on timeout or EOF).
  json ReadLine() {
    while (true) {
      auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return json::parse(line);
      }
      pollfd pfd{from_server_[0], POLLIN, 0};
      if (poll(&pfd, 1, 30000) <= 0) return json();
      char chunk[4096];
      ssize_t n = read(from_server_[0], chunk, sizeof chunk);
      if (n <= 0) return json();
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  FakeService service_;
  mcp::Dispatcher dispatcher_ = mcp::testing::MakeDispatcher(service_);
  std::unique_ptr<StdioTransport> transport_;
  int to_server_[2] = {-1, -1};
  int from_server_[2] = {-1, -1};
  std::string buffer_;
  std::thread server_;
};

}  // namespace sandbox::transport::testing
