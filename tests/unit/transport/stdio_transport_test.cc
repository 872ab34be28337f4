#include "sandbox/transport/stdio_transport.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <thread>

#include "unit/transport/stdio_fixture.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;

using mcp::testing::CallRunPython;
using mcp::testing::InitializeRequest;
using mcp::testing::ModernRequest;
using mcp::testing::Notification;
using mcp::testing::Request;
using sandbox::testing::FakeService;
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
  EXPECT_EQ(ReadLine()["error"]["code"], jsonrpc::rpc_code::kParseError);
  WriteRaw(std::string(5000, ' ') + "x\n");  // over the 4096-byte limit
  EXPECT_EQ(ReadLine()["error"]["code"], jsonrpc::rpc_code::kInvalidRequest);
  WriteLine(Request(1, "tools/list"));  // before initialize
  EXPECT_EQ(ReadLine()["error"]["code"], jsonrpc::rpc_code::kInvalidRequest);
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
  EXPECT_TRUE(service_.WaitForCancelled());
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
  EXPECT_TRUE(service_.WaitForCancelled());
}

// ---- 2026-07-28: stdio tells the eras apart ----

using ModernStdioTest = testing::StdioTest;

TEST_F(ModernStdioTest, ModernRequestsNeedNoInitialize) {
  WriteLine(ModernRequest(1, "server/discover"));
  EXPECT_EQ(ReadLine()["result"]["supportedVersions"][0], "2026-07-28");
  WriteLine(ModernRequest(2, "tools/call",
                          {{"name", "run_python"}, {"arguments", {{"code", "print(1)"}}}}));
  json response = ReadLine();
  EXPECT_EQ(response["id"], 2);
  EXPECT_EQ(response["result"]["resultType"], "complete");
  // A legacy request before initialize is still refused as before.
  WriteLine(Request(3, "tools/list"));
  EXPECT_EQ(ReadLine()["error"]["code"], jsonrpc::rpc_code::kInvalidRequest);
}

TEST_F(ModernStdioTest, CancelledReachesAModernRun) {
  service_.SetBehaviour(service_.BlockUntilCancelled());
  WriteLine(ModernRequest(7, "tools/call",
                          {{"name", "run_python"}, {"arguments", {{"code", "while True: pass"}}}}));
  ASSERT_TRUE(service_.WaitStarted());
  WriteLine(Notification("notifications/cancelled", {{"requestId", 7}}));
  EXPECT_TRUE(service_.WaitForCancelled());
  WriteLine(ModernRequest(8, "tools/list"));
  EXPECT_EQ(ReadLine()["id"], 8);  // the cancelled call sent no response
}

TEST_F(ModernStdioTest, InitializeMakesTheProcessLegacy) {
  WriteLine(InitializeRequest());
  EXPECT_EQ(ReadLine()["result"]["protocolVersion"], "2025-11-25");
  // After initialize, server/discover is a method the legacy era does not know.
  WriteLine(ModernRequest(2, "server/discover"));
  EXPECT_EQ(ReadLine()["error"]["code"], jsonrpc::rpc_code::kMethodNotFound);
  WriteLine(ModernRequest(3, "tools/list"));
  EXPECT_FALSE(ReadLine()["result"].contains("resultType"));
}

}  // namespace
}  // namespace sandbox::transport
