#include "sandbox/mcp/stdio_transport.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <thread>

#include "unit/mcp/test_util.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

using testing::CallRunPython;
using testing::FakeService;
using testing::InitializeRequest;
using testing::Notification;
using testing::Request;

// Runs a StdioTransport over two pipes; the test writes lines and reads response lines.
class StdioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe(to_server_), 0);
    ASSERT_EQ(pipe(from_server_), 0);
    StdioOptions options;
    options.max_message_bytes = 4096;
    transport_ = std::make_unique<StdioTransport>(dispatcher_, options, testing::NullLogger());
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
  Dispatcher dispatcher_ = testing::MakeDispatcher(service_);
  std::unique_ptr<StdioTransport> transport_;
  int to_server_[2] = {-1, -1};
  int from_server_[2] = {-1, -1};
  std::string buffer_;
  std::thread server_;
};

TEST_F(StdioTest, OneMessagePerLine) {
  WriteLine(InitializeRequest("2025-06-18", 1));
  json init = ReadLine();
  EXPECT_EQ(init["id"], 1);
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  // Two messages in one write, one split over two writes, a CRLF line and a blank line.
  WriteRaw(Notification("notifications/initialized").dump() + "\n" + Request(2, "ping").dump() +
           "\n\n");
  std::string split = Request("3", "tools/list").dump();
  WriteRaw(split.substr(0, 10));
  WriteRaw(split.substr(10) + "\r\n");
  EXPECT_EQ(ReadLine()["id"], 2);
  json list = ReadLine();
  EXPECT_EQ(list["id"], "3");
  EXPECT_EQ(list["result"]["tools"].size(), 2u);
}

TEST_F(StdioTest, BadLinesGetErrors) {
  WriteRaw("{oops\n");
  EXPECT_EQ(ReadLine()["error"]["code"], rpc_code::kParseError);
  WriteRaw(std::string(5000, ' ') + "x\n");  // over the 4096-byte limit
  EXPECT_EQ(ReadLine()["error"]["code"], rpc_code::kInvalidRequest);
  WriteLine(Request(1, "tools/list"));  // before initialize
  EXPECT_EQ(ReadLine()["error"]["code"], rpc_code::kInvalidRequest);
}

TEST_F(StdioTest, CancelArrivesWhileARunIsInProgress) {
  service_.SetBehaviour(service_.BlockUntilCancelled());
  WriteLine(InitializeRequest());
  ReadLine();
  WriteLine(CallRunPython(7, {{"code", "while True: pass"}}, "p"));
  ASSERT_TRUE(service_.WaitStarted());
  json progress = ReadLine();  // the run's "started" output
  EXPECT_EQ(progress["method"], "notifications/progress");
  WriteLine(Notification("notifications/cancelled", {{"requestId", 7}}));
  EXPECT_TRUE(service_.WaitCancelled());
  WriteLine(Request(8, "ping"));
  // The next line is the ping's answer: the cancelled call sent no response.
  EXPECT_EQ(ReadLine()["id"], 8);
}

TEST_F(StdioTest, EndOfInputLetsRunsFinishAndAnswers) {
  WriteLine(InitializeRequest());
  ReadLine();
  WriteLine(CallRunPython(1, {{"code", "print('hello')"}}));
  CloseInput();
  json response = ReadLine();
  EXPECT_EQ(response["id"], 1);
  EXPECT_EQ(response["result"]["structuredContent"]["stdout"], "hello\n");
  server_.join();  // Run() returned by itself once the input ended and the run was answered
}

TEST_F(StdioTest, StopCancelsRunsInFlight) {
  service_.SetBehaviour(service_.BlockUntilCancelled());
  WriteLine(InitializeRequest());
  ReadLine();
  WriteLine(CallRunPython(1, {{"code", "x"}}));
  ASSERT_TRUE(service_.WaitStarted());
  transport_->Stop();
  server_.join();
  EXPECT_TRUE(service_.WaitCancelled());
}

}  // namespace
}  // namespace sandbox::mcp
