#include "sandbox/mcp/dispatcher.h"

#include <gtest/gtest.h>

#include <thread>

#include "sandbox/core/base64.h"
#include "unit/mcp/test_util.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
namespace rpc_code = jsonrpc::rpc_code;
using jsonrpc::DumpJson;
using jsonrpc::kMaxBatchSize;

using sandbox::testing::FakeService;
using testing::CallRunPython;
using testing::InitializeRequest;
using testing::Notification;
using testing::RecordingOutbound;
using testing::Request;

class DispatcherTest : public ::testing::Test {
 protected:
  json Send(const json& message) {
    auto response = dispatcher_.Handle(session_, message, out_);
    return response ? *response : json();
  }
  void Initialize(const std::string& version = "2025-11-25") {
    json response = Send(InitializeRequest(version));
    ASSERT_TRUE(response.contains("result")) << response;
    Send(Notification("notifications/initialized"));
  }
  json Call(json arguments, json progress_token = nullptr) {
    return Send(CallRunPython(1, std::move(arguments), std::move(progress_token)));
  }
  static std::string ErrorMessage(const json& response) {
    return response.at("error").at("message").get<std::string>();
  }

  FakeService service_;
  Dispatcher dispatcher_ = testing::MakeDispatcher(service_);
  Session session_;
  RecordingOutbound out_;
};

TEST_F(DispatcherTest, InitializeNegotiatesTheVersion) {
  json response = Send(InitializeRequest("2025-06-18"));
  EXPECT_EQ(response["result"]["protocolVersion"], "2025-06-18");
  EXPECT_TRUE(response["result"]["capabilities"].contains("tools"));
  EXPECT_TRUE(response["result"]["capabilities"].contains("logging"));
  EXPECT_EQ(response["result"]["serverInfo"]["name"], "sandbox-mcp");
  EXPECT_EQ(session_.protocol_version(), "2025-06-18");

  Session other;
  auto latest = dispatcher_.Handle(other, InitializeRequest("1999-01-01"), out_);
  EXPECT_EQ((*latest)["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(DispatcherTest, SecondInitializeIsRefused) {
  Initialize();
  EXPECT_EQ(Send(InitializeRequest())["error"]["code"], rpc_code::kInvalidRequest);
}

TEST_F(DispatcherTest, InitializeWithoutProtocolVersionNamesTheField) {
  json response = Send(Request(0, "initialize", {{"capabilities", json::object()}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_NE(ErrorMessage(response).find("protocolVersion"), std::string::npos);
}

TEST_F(DispatcherTest, RequestsBeforeInitializeAreAnsweredAtOnce) {
  EXPECT_EQ(Send(Request(1, "tools/list"))["error"]["code"], rpc_code::kInvalidRequest);
  EXPECT_EQ(Send(Request(2, "ping"))["result"], json::object());
  EXPECT_EQ(Send(Request(3, "server/discover"))["error"]["code"], rpc_code::kMethodNotFound);
}

TEST_F(DispatcherTest, IdsAreEchoedExactly) {
  Initialize();
  EXPECT_EQ(Send(Request(1, "ping"))["id"], json(1));
  EXPECT_EQ(Send(Request("1", "ping"))["id"], json("1"));
  EXPECT_TRUE(Send(Request("1", "ping"))["id"].is_string());
  EXPECT_EQ(Send(Request(-5, "ping"))["id"], json(-5));
}

TEST_F(DispatcherTest, UnknownMethodsAndBrokenMessagesGetTheRightCodes) {
  Initialize();
  EXPECT_EQ(Send(Request(1, "resources/list"))["error"]["code"], rpc_code::kMethodNotFound);
  EXPECT_EQ(Send(json{{"id", 2}, {"method", "ping"}})["error"]["code"], rpc_code::kInvalidRequest);
  auto parse_error = dispatcher_.HandleText(session_, "{not json", out_);
  EXPECT_EQ((*parse_error)["error"]["code"], rpc_code::kParseError);
  EXPECT_TRUE((*parse_error)["id"].is_null());
  // Notifications and client responses get no answer.
  EXPECT_FALSE(dispatcher_.Handle(session_, Notification("notifications/whatever"), out_));
  EXPECT_FALSE(dispatcher_.Handle(session_, {{"jsonrpc", "2.0"}, {"id", 9}, {"result", {}}}, out_));
}

TEST_F(DispatcherTest, ToolsListDescribesRunPythonWithSchemas) {
  Initialize();
  json tools = Send(Request(1, "tools/list"))["result"]["tools"];
  ASSERT_EQ(tools.size(), 2u);
  const json& run = tools[0];
  EXPECT_EQ(run["name"], "run_python");
  EXPECT_FALSE(run["description"].get<std::string>().empty());
  EXPECT_EQ(run["inputSchema"]["required"], json::array({"code"}));
  EXPECT_TRUE(run["inputSchema"]["properties"].contains("timeout_s"));
  EXPECT_TRUE(run["inputSchema"]["properties"].contains("files"));
  for (auto field : {"verdict", "exit_code", "stdout", "stderr", "duration_ms", "value",
                     "traceback", "images", "files"}) {
    EXPECT_TRUE(run["outputSchema"]["properties"].contains(field)) << field;
  }
  EXPECT_EQ(tools[1]["name"], "sandbox_info");
}

TEST_F(DispatcherTest, ToolArgumentErrorsNameTheField) {
  Initialize();
  EXPECT_EQ(ErrorMessage(Call({{"code", 5}})), "code: expected a string");
  EXPECT_NE(ErrorMessage(Call(json::object())).find("code: required"), std::string::npos);
  EXPECT_EQ(ErrorMessage(Call({{"code", "1"}, {"timeout_s", "x"}})),
            "timeout_s: expected a number");
  EXPECT_NE(ErrorMessage(Call({{"code", "1"}, {"timeout_s", -1}})).find("timeout_s"),
            std::string::npos);
  EXPECT_NE(ErrorMessage(Call({{"code", "1"}, {"files", {{{"path", 1}}}}})).find("files[0].path"),
            std::string::npos);
  EXPECT_NE(
      ErrorMessage(Call({{"code", "1"}, {"files", {{{"path", "a"}, {"content_base64", "!!"}}}}}))
          .find("files[0].content_base64"),
      std::string::npos);
  EXPECT_NE(ErrorMessage(Call({{"code", "1"}, {"session_id", "s"}}))
                .find("sessions are disabled on this server"),
            std::string::npos);
  EXPECT_NE(ErrorMessage(Call({{"code", "1"}, {"memory_bytes", "lots"}})).find("memory_bytes"),
            std::string::npos);
  EXPECT_NE(ErrorMessage(Call({{"code", "1"}, {"output_bytes", -5}})).find("output_bytes"),
            std::string::npos);
  EXPECT_NE(ErrorMessage(Call({{"code", "1"}, {"bogus", 1}})).find("bogus"), std::string::npos);
  EXPECT_EQ(Call({{"code", 5}})["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_TRUE(service_.requests().empty());
}

TEST_F(DispatcherTest, UnknownToolIsInvalidParams) {
  Initialize();
  json response = Send(Request(1, "tools/call", {{"name", "nope"}, {"arguments", json::object()}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_NE(ErrorMessage(response).find("nope"), std::string::npos);
  EXPECT_EQ(Send(Request(2, "tools/call", {{"arguments", json::object()}}))["error"]["code"],
            rpc_code::kInvalidParams);
}

TEST_F(DispatcherTest, ArgumentsReachTheEngine) {
  Initialize();
  json response = Call({{"code", "print(1)"},
                        {"timeout_s", 12.5},
                        {"files", {{{"path", "in.txt"}, {"content_base64", Base64Encode("hi")}}}}});
  ASSERT_TRUE(response.contains("result")) << response;
  auto requests = service_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].code, "print(1)");
  EXPECT_EQ(requests[0].limits.timeout_s, 12.5);
  ASSERT_EQ(requests[0].files.size(), 1u);
  EXPECT_EQ(requests[0].files[0].path, "in.txt");
  EXPECT_EQ(requests[0].files[0].content, "hi");
}

TEST_F(DispatcherTest, EngineRefusalsOfInvalidInputAreInvalidParams) {
  Initialize();
  service_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver&,
                           const exec::CancelToken&) -> Result<exec::RunResult> {
    return Error(ErrorCode::kInvalidArgument, "timeout_s: 999 exceeds the maximum 300");
  });
  json response = Call({{"code", "1"}, {"timeout_s", 999}});
  EXPECT_EQ(response["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_NE(ErrorMessage(response).find("timeout_s"), std::string::npos);

  service_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver&,
                           const exec::CancelToken&) -> Result<exec::RunResult> {
    return Error(ErrorCode::kBusy, "no sandbox within 10 s");
  });
  response = Call({{"code", "1"}});
  EXPECT_TRUE(response["result"]["isError"].get<bool>());
  EXPECT_EQ(response["result"]["structuredContent"]["verdict"], "internal");
  EXPECT_NE(response["result"]["content"][0]["text"].get<std::string>().find("busy"),
            std::string::npos);
}

// A run refused by the fair-share limits is a tool error the model can act on: it names the
// limit and how long to wait. The request carries the session's principal.
TEST_F(DispatcherTest, RateLimitedRunIsAToolErrorSayingHowLongToWait) {
  Initialize();
  std::string principal;
  service_.SetBehaviour([&](const exec::RunRequest& request, exec::RunObserver&,
                            const exec::CancelToken&) -> Result<exec::RunResult> {
    principal = request.principal;
    return Error(ErrorCode::kRateLimited,
                 "this token started 60 runs within the last minute "
                 "(per_principal.runs_per_minute); retry in 7 s")
        .WithRetryAfter(7);
  });
  json response = Call({{"code", "1"}});
  EXPECT_EQ(principal, session_.principal());
  EXPECT_TRUE(response["result"]["isError"].get<bool>());
  const std::string text = response["result"]["content"][0]["text"].get<std::string>();
  EXPECT_NE(text.find("Rate limited"), std::string::npos) << text;
  EXPECT_NE(text.find("Wait 7 s"), std::string::npos) << text;
  EXPECT_NE(text.find("per_principal.runs_per_minute"), std::string::npos) << text;
}

TEST_F(DispatcherTest, RunResultShape) {
  Initialize();
  service_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver&,
                           const exec::CancelToken&) -> Result<exec::RunResult> {
    exec::RunResult r;
    r.verdict = exec::Verdict::kError;
    r.exit_code = 1;
    r.duration_ms = 42;
    r.stdout_text = "bad \xff byte\n";
    r.stderr_text = "warn\n";
    r.value = "'v'";
    r.traceback = exec::Traceback{"ValueError", "boom", {{"<cell>", 3, "<module>"}}};
    r.images.push_back(exec::Image{"image/png", 64, 48, "\x89PNG fake"});
    r.files.push_back(exec::OutputFile{"out/data.csv", 4, "text/csv", "a,b\n"});
    r.files.push_back(
        exec::OutputFile{"blob.bin", 2, "application/octet-stream", std::string("\x00\xff", 2)});
    r.files.push_back(exec::OutputFile{"bad.txt", 1, "text/plain", "\xff"});
    r.output_truncated = true;
    r.detail = "uncaught exception";
    return r;
  });
  json response = Call({{"code", "x"}});
  ASSERT_TRUE(response.contains("result")) << response;
  const json& result = response["result"];
  EXPECT_TRUE(result["isError"].get<bool>());
  const json& s = result["structuredContent"];
  EXPECT_EQ(s["verdict"], "error");
  EXPECT_EQ(s["exit_code"], 1);
  EXPECT_EQ(s["duration_ms"], 42);
  EXPECT_EQ(s["stdout"], "bad \xEF\xBF\xBD byte\n");
  EXPECT_EQ(s["value"], "'v'");
  EXPECT_EQ(s["traceback"]["type"], "ValueError");
  EXPECT_EQ(s["traceback"]["frames"][0]["line"], 3);
  EXPECT_EQ(s["images"][0],
            json({{"mime_type", "image/png"}, {"width", 64}, {"height", 48}, {"bytes", 9}}));
  EXPECT_EQ(s["files"][0],
            json({{"path", "out/data.csv"}, {"size", 4}, {"mime_type", "text/csv"}}));
  EXPECT_TRUE(s["output_truncated"].get<bool>());

  const json& content = result["content"];
  ASSERT_EQ(content.size(), 5u);  // text, image, three resources
  EXPECT_EQ(content[0]["type"], "text");
  const std::string text = content[0]["text"];
  for (auto part : {"verdict: error", "bad \xEF\xBF\xBD byte", "warn", "'v'", "ValueError: boom",
                    "truncated", "out/data.csv"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " in\n" << text;
  }
  EXPECT_EQ(content[1]["type"], "image");
  EXPECT_EQ(content[1]["mimeType"], "image/png");
  EXPECT_EQ(*Base64Decode(content[1]["data"].get<std::string>()), "\x89PNG fake");
  EXPECT_EQ(content[2]["type"], "resource");
  EXPECT_EQ(content[2]["resource"]["uri"],
            "sandbox://runs/" + content[2]["resource"]["uri"].get<std::string>().substr(15, 16) +
                "/files/out/data.csv");
  EXPECT_EQ(content[2]["resource"]["text"], "a,b\n");
  EXPECT_EQ(*Base64Decode(content[3]["resource"]["blob"].get<std::string>()),
            std::string("\x00\xff", 2));
  EXPECT_TRUE(content[4]["resource"].contains("blob"));  // text/plain but not UTF-8
  // The whole response serializes (no invalid UTF-8 left anywhere).
  EXPECT_NO_THROW((void)response.dump());
}

TEST_F(DispatcherTest, OkRunIsNotAnError) {
  Initialize();
  json result = Call({{"code", "print('hello')"}})["result"];
  EXPECT_FALSE(result["isError"].get<bool>());
  EXPECT_EQ(result["structuredContent"]["stdout"], "hello\n");
  EXPECT_TRUE(result["structuredContent"]["images"].empty());
}

TEST_F(DispatcherTest, ProgressNotificationsIncreaseAndPrecedeTheResult) {
  Initialize();
  service_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver& observer,
                           const exec::CancelToken&) -> Result<exec::RunResult> {
    for (int i = 0; i < 5; ++i) observer.OnOutput(exec::Stream::kStdout, std::to_string(i) + "\n");
    observer.OnOutput(exec::Stream::kStderr, "oops\n");
    exec::RunResult r;
    r.verdict = exec::Verdict::kOk;
    r.exit_code = 0;
    return r;
  });
  json response = Call({{"code", "x"}}, "tok");
  ASSERT_TRUE(response.contains("result"));
  // Handle() returned the response only after these were sent.
  auto progress = out_.WithMethod("notifications/progress");
  ASSERT_FALSE(progress.empty());
  std::string all;
  double last = -1;
  for (const auto& p : progress) {
    EXPECT_EQ(p["params"]["progressToken"], "tok");
    double value = p["params"]["progress"].get<double>();
    EXPECT_GT(value, last);
    last = value;
    all += p["params"]["message"].get<std::string>();
  }
  EXPECT_EQ(all, "0\n1\n2\n3\n4\n[stderr] oops\n");
  // No logging level set: no log messages.
  EXPECT_TRUE(out_.WithMethod("notifications/message").empty());
}

TEST_F(DispatcherTest, NoProgressTokenNoProgress) {
  Initialize();
  Call({{"code", "x"}});
  EXPECT_TRUE(out_.messages().empty());
}

TEST_F(DispatcherTest, LogMessagesFollowTheClientsLevel) {
  Initialize();
  EXPECT_EQ(Send(Request(5, "logging/setLevel", {{"level", "info"}}))["result"], json::object());
  EXPECT_NE(ErrorMessage(Send(Request(6, "logging/setLevel", {{"level", "loud"}}))).find("level"),
            std::string::npos);
  service_.SetBehaviour([](const exec::RunRequest&, exec::RunObserver& observer,
                           const exec::CancelToken&) -> Result<exec::RunResult> {
    observer.OnOutput(exec::Stream::kStdout, "out\n");
    observer.OnOutput(exec::Stream::kStderr, "err\n");
    exec::RunResult r;
    r.verdict = exec::Verdict::kOk;
    return r;
  });
  Call({{"code", "x"}});
  auto logs = out_.WithMethod("notifications/message");
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0]["params"]["level"], "info");
  EXPECT_EQ(logs[0]["params"]["logger"], "stdout");
  EXPECT_EQ(logs[0]["params"]["data"], "out\n");
  EXPECT_EQ(logs[1]["params"]["level"], "warning");

  Send(Request(7, "logging/setLevel", {{"level", "error"}}));
  RecordingOutbound quiet;
  dispatcher_.Handle(session_, CallRunPython(8, {{"code", "x"}}), quiet);
  EXPECT_TRUE(quiet.messages().empty());
}

TEST_F(DispatcherTest, CancellationStopsTheRunAndSuppressesTheResponse) {
  Initialize();
  service_.SetBehaviour(service_.BlockUntilCancelled());
  std::optional<json> response = json("unset");
  std::thread call([&] {
    response = dispatcher_.Handle(session_, CallRunPython("r1", {{"code", "x"}}), out_);
  });
  ASSERT_TRUE(service_.WaitStarted());
  // A cancel for another id (1 vs "1" style mismatch) changes nothing.
  Send(Notification("notifications/cancelled", {{"requestId", 1}}));
  Send(Notification("notifications/cancelled", {{"requestId", "r1"}, {"reason", "user"}}));
  call.join();
  EXPECT_TRUE(service_.WaitForCancelled());
  EXPECT_FALSE(response.has_value());
  EXPECT_EQ(session_.in_flight(), 0u);
}

TEST_F(DispatcherTest, DuplicateIdInFlightIsRefused) {
  Initialize();
  service_.SetBehaviour(service_.BlockUntilCancelled());
  std::thread call([&] { dispatcher_.Handle(session_, CallRunPython(1, {{"code", "x"}}), out_); });
  ASSERT_TRUE(service_.WaitStarted());
  json duplicate = Send(CallRunPython(1, {{"code", "y"}}));
  EXPECT_EQ(duplicate["error"]["code"], rpc_code::kInvalidRequest);
  session_.End();
  call.join();
}

TEST_F(DispatcherTest, BatchesOnlyIn20250326) {
  Initialize("2025-06-18");
  json batch = json::array({Request(1, "ping"), Request(2, "ping")});
  json refused = *dispatcher_.HandleBatch(session_, batch, out_);
  EXPECT_EQ(refused["error"]["code"], rpc_code::kInvalidRequest);

  Session old;
  dispatcher_.Handle(old, InitializeRequest("2025-03-26"), out_);
  json answered = *dispatcher_.HandleText(
      old,
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},)"
      R"({"jsonrpc":"2.0","id":"b","method":"tools/list"}])",
      out_);
  ASSERT_TRUE(answered.is_array());
  ASSERT_EQ(answered.size(), 2u);
  EXPECT_EQ(answered[0]["id"], 1);
  EXPECT_EQ(answered[1]["id"], "b");
}

// Found by fuzz_mcp_dispatcher: a batch member with a non-string method threw a JSON type error
// out of HandleBatch (stdio: the server terminated; HTTP: a 500 without a JSON body).
TEST_F(DispatcherTest, BatchMembersOfAnyShapeGetAnErrorNotAnException) {
  Session old;
  dispatcher_.Handle(old, InitializeRequest("2025-03-26"), out_);
  json answered = *dispatcher_.HandleText(old,
                                          R"([{"jsonrpc":"2.0","id":1,"method":5},)"
                                          R"({"jsonrpc":"2.0","id":{"a":1},"method":"initialize"},)"
                                          R"({"jsonrpc":"2.0","id":2,"method":"ping"}])",
                                          out_);
  ASSERT_TRUE(answered.is_array());
  ASSERT_EQ(answered.size(), 3u);
  EXPECT_EQ(answered[0]["id"], 1);
  EXPECT_EQ(answered[0]["error"]["code"], rpc_code::kInvalidRequest);
  // An id that is no string or number is not echoed (a JSON-RPC response cannot carry it).
  EXPECT_TRUE(answered[1]["id"].is_null()) << answered[1];
  EXPECT_EQ(answered[1]["error"]["code"], rpc_code::kInvalidRequest);
  EXPECT_EQ(answered[2]["id"], 2);
  EXPECT_TRUE(answered[2].contains("result"));
}

TEST_F(DispatcherTest, BatchesAreBoundedInSize) {
  Session old;
  dispatcher_.Handle(old, InitializeRequest("2025-03-26"), out_);
  json batch = json::array();
  for (std::size_t i = 0; i <= kMaxBatchSize; ++i) batch.push_back(Request(i, "ping"));
  json refused = *dispatcher_.HandleText(old, DumpJson(batch), out_);
  EXPECT_EQ(refused["error"]["code"], rpc_code::kInvalidRequest);
  EXPECT_NE(ErrorMessage(refused).find("limit of 64"), std::string::npos) << refused;
}

TEST_F(DispatcherTest, DeeplyNestedParamsAreAParseErrorNotACrash) {
  Initialize();
  // About 200 KB: an initialized session's ping whose params nest 100,000 arrays deep used to
  // overflow the worker's stack and kill the server.
  std::string text = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":)" +
                     std::string(100000, '[') + std::string(100000, ']') + "}}";
  json response = *dispatcher_.HandleText(session_, text, out_);
  EXPECT_EQ(response["error"]["code"], rpc_code::kParseError);
  EXPECT_NE(ErrorMessage(response).find("deeper than 64 levels"), std::string::npos) << response;
  // The session still works.
  EXPECT_TRUE(Send(Request(2, "ping")).contains("result"));
}

TEST_F(DispatcherTest, SandboxInfoReturnsStructuredAndText) {
  Initialize();
  json result = Send(Request(1, "tools/call",
                             {{"name", "sandbox_info"}, {"arguments", json::object()}}))["result"];
  EXPECT_EQ(result["structuredContent"]["python"], "3.11.2");
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find("numpy 1.24.2"),
            std::string::npos);
}

// With several pools run_python takes `pool`, lists the names and says what each adds.
TEST(RunPythonPoolTest, SeveralPoolsMakeAPoolArgument) {
  FakeService service;
  RunPythonOptions options;
  options.pools = {{"default", {}}, {"ml", {"python3-sklearn", "xgboost==2.0"}}};
  ToolRegistry tools;
  tools.Add(std::make_unique<RunPythonTool>(service, options));
  Dispatcher dispatcher(ServerIdentity{}, std::move(tools), testing::NullLogger());
  Session session;
  RecordingOutbound out;
  auto send = [&](const json& message) {
    auto response = dispatcher.Handle(session, message, out);
    return response ? *response : json();
  };
  ASSERT_TRUE(send(InitializeRequest("2025-11-25")).contains("result"));
  send(Notification("notifications/initialized"));
  json pool =
      send(Request(1, "tools/list"))["result"]["tools"][0]["inputSchema"]["properties"]["pool"];
  EXPECT_EQ(pool["enum"], json::array({"default", "ml"}));
  EXPECT_NE(
      pool["description"].get<std::string>().find("\"ml\" also has python3-sklearn, xgboost==2.0"),
      std::string::npos)
      << pool;

  json ok = send(CallRunPython(2, {{"code", "1"}, {"pool", "ml"}}));
  ASSERT_TRUE(ok.contains("result")) << ok;
  ASSERT_EQ(service.requests().size(), 1u);
  EXPECT_EQ(service.requests()[0].pool, "ml");
  json unknown = send(CallRunPython(3, {{"code", "1"}, {"pool", "gpu"}}));
  EXPECT_EQ(unknown["error"]["message"], "pool: expected one of \"default\", \"ml\"");
  EXPECT_EQ(send(CallRunPython(4, {{"code", "1"}, {"pool", 7}}))["error"]["code"],
            rpc_code::kInvalidParams);
  EXPECT_EQ(service.requests().size(), 1u);
}

TEST_F(DispatcherTest, OnePoolMeansNoPoolArgument) {
  Initialize();
  json tools = Send(Request(1, "tools/list"))["result"]["tools"];
  EXPECT_FALSE(tools[0]["inputSchema"]["properties"].contains("pool"));
  EXPECT_NE(ErrorMessage(Call({{"code", "1"}, {"pool", "default"}})).find("pool"),
            std::string::npos);
}

// sandbox_info's text says what a pool's image has beyond the default pool's.
TEST(SandboxInfoSummaryTest, PoolsSayWhatTheirImagesAdd) {
  FakeService service;
  service.SetInfo(
      {{"python", "3.11.2"},
       {"packages", {{{"name", "numpy"}, {"version", "1.24.2"}}}},
       {"pools",
        {{{"name", "default"}, {"packages", {{{"name", "numpy"}, {"version", "1.24.2"}}}}},
         {{"name", "ml"},
          {"extra_packages", {{"debian", {"python3-sklearn"}}, {"pip", json::array()}}},
          {"packages",
           {{{"name", "numpy"}, {"version", "1.24.2"}},
            {{"name", "scikit-learn"}, {"version", "1.2.1"}}}}}}}});
  Dispatcher dispatcher = testing::MakeDispatcher(service);
  Session session;
  RecordingOutbound out;
  ASSERT_TRUE(dispatcher.Handle(session, InitializeRequest("2025-11-25"), out));
  dispatcher.Handle(session, Notification("notifications/initialized"), out);
  auto response = dispatcher.Handle(
      session, Request(1, "tools/call", {{"name", "sandbox_info"}, {"arguments", json::object()}}),
      out);
  ASSERT_TRUE(response.has_value());
  const std::string text = (*response)["result"]["content"][0]["text"];
  EXPECT_NE(text.find("Pool ml (?, ?); extra packages: python3-sklearn (debian); installed beyond "
                      "the default pool: scikit-learn 1.2.1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Pool default (?, ?)\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace sandbox::mcp
