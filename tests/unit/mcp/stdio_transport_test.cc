#include "sandbox/mcp/stdio_transport.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <thread>

#include "unit/mcp/stdio_fixture.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

using testing::CallRunPython;
using testing::FakeService;
using testing::InitializeRequest;
using testing::Notification;
using testing::Request;
using testing::StdioTest;

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
