// MCP 2026-07-28 in the dispatcher: requests served without initialize, _meta validated on each,
// the revision's result fields and error codes, logs only when the request asks, capabilities
// read from the request itself. (How stdio tells the eras apart: tests/unit/transport.)
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "conformance/conformance_tools.h"
#include "sandbox/mcp/protocol_version.h"
#include "sandbox/mcp/request_state.h"
#include "unit/mcp/test_util.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
namespace rpc_code = jsonrpc::rpc_code;
using sandbox::testing::FakeService;
using testing::ModernRequest;
using testing::RecordingOutbound;

// `request_state_key`: as server.request_state_key_file gives it ("": random per dispatcher).
Dispatcher MakeFixtureDispatcher(std::string request_state_key = {}) {
  ToolRegistry tools;
  for (auto& tool : testing::MakeConformanceTools()) tools.Add(std::move(tool));
  ResourceRegistry resources;
  resources.Add(testing::MakeConformanceResources());
  return Dispatcher(ServerIdentity{"sandbox-mcp", "Python sandbox", "1.2.3", ""}, std::move(tools),
                    std::move(resources), testing::NullLogger(), nullptr,
                    std::move(request_state_key));
}

class ModernDispatcherTest : public ::testing::Test {
 protected:
  json Handle(const json& message) {
    auto response = dispatcher_.HandleModern(calls_, message, out_);
    return response ? *response : json();
  }
  Dispatcher dispatcher_ = MakeFixtureDispatcher();
  Session calls_{"alice"};
  RecordingOutbound out_;
};

TEST_F(ModernDispatcherTest, DiscoverListsBothErasAndIdentifiesTheServer) {
  json response = Handle(ModernRequest(1, "server/discover"));
  const json& result = response["result"];
  EXPECT_EQ(result["resultType"], "complete");
  json versions = json::array();
  for (auto v : AllProtocolVersions()) versions.push_back(std::string(v));
  EXPECT_EQ(result["supportedVersions"], versions);
  EXPECT_EQ(result["supportedVersions"][0], "2026-07-28");
  EXPECT_TRUE(result["capabilities"].contains("tools"));
  EXPECT_TRUE(result["capabilities"].contains("resources"));
  EXPECT_FALSE(result["capabilities"].contains("prompts"));
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], "1.2.3");
  EXPECT_EQ(result["cacheScope"], "public");
  EXPECT_TRUE(result["ttlMs"].is_number_integer());
}

TEST_F(ModernDispatcherTest, MetaIsRequiredOnEveryRequest) {
  // No _meta, no version, no capabilities: -32602 with the request's id.
  json no_meta = testing::Request(5, "tools/list");
  EXPECT_EQ(Handle(no_meta)["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_EQ(Handle(no_meta)["id"], 5);
  json meta = testing::ModernMeta();
  meta.erase("io.modelcontextprotocol/protocolVersion");
  EXPECT_EQ(Handle(ModernRequest(6, "tools/list", {}, meta))["error"]["code"],
            rpc_code::kInvalidParams);
  meta = testing::ModernMeta();
  meta.erase("io.modelcontextprotocol/clientCapabilities");
  EXPECT_EQ(Handle(ModernRequest(7, "tools/list", {}, meta))["error"]["code"],
            rpc_code::kInvalidParams);
  // clientInfo is optional.
  meta = testing::ModernMeta();
  meta.erase("io.modelcontextprotocol/clientInfo");
  EXPECT_TRUE(Handle(ModernRequest(8, "tools/list", {}, meta)).contains("result"));
  // A bad log level is a bad _meta.
  meta = testing::ModernMeta();
  meta["io.modelcontextprotocol/logLevel"] = "loud";
  EXPECT_EQ(Handle(ModernRequest(9, "tools/list", {}, meta))["error"]["code"],
            rpc_code::kInvalidParams);
}

TEST_F(ModernDispatcherTest, AnUnservedVersionNamesTheSupportedOnes) {
  for (const char* version : {"v999.0.0", "2025-11-25"}) {
    json meta = testing::ModernMeta();
    meta["io.modelcontextprotocol/protocolVersion"] = version;
    json response = Handle(ModernRequest(3, "server/discover", {}, meta));
    EXPECT_EQ(response["error"]["code"], rpc_code::kUnsupportedProtocolVersion) << version;
    EXPECT_EQ(response["error"]["data"]["requested"], version);
    EXPECT_EQ(response["error"]["data"]["supported"][0], "2026-07-28");
    EXPECT_EQ(response["id"], 3);
    EXPECT_EQ(Dispatcher::ModernHttpStatus(response), 400);
  }
}

// CheckModern reads the envelope and _meta once: a refusal with its HTTP status (400 for a
// malformed request, 404 for an unknown method, 200 for an error about the call), or the
// request's _meta for HandleModern, which then serves it without reading _meta again.
TEST_F(ModernDispatcherTest, CheckModernHandsBackTheMetaOrARefusalWithItsStatus) {
  json meta = testing::ModernMeta({{"sampling", json::object()}});
  meta["io.modelcontextprotocol/logLevel"] = "debug";
  ModernCheck passed = dispatcher_.CheckModern(ModernRequest(1, "tools/list", {}, meta));
  EXPECT_FALSE(passed.refusal);
  ASSERT_TRUE(passed.meta);
  EXPECT_EQ(passed.meta->protocol_version, "2026-07-28");
  EXPECT_TRUE(passed.meta->HasCapability("sampling"));
  EXPECT_EQ(passed.meta->log_level, LogLevel::kDebug);
  auto served = dispatcher_.HandleModern(calls_, ModernRequest(1, "tools/list", {}, meta),
                                         *passed.meta, out_);
  ASSERT_TRUE(served);
  EXPECT_EQ((*served)["result"]["resultType"], "complete");

  auto refused = [this](const json& message, int code, int status) {
    ModernCheck check = dispatcher_.CheckModern(message);
    ASSERT_TRUE(check.refusal) << message;
    EXPECT_FALSE(check.meta);
    EXPECT_EQ((*check.refusal)["error"]["code"], code) << message;
    EXPECT_EQ(check.http_status, status) << message;
    EXPECT_EQ((*check.refusal)["id"], message.value("id", json())) << message;
  };
  refused(testing::Request(2, "tools/list"), rpc_code::kInvalidParams, 400);  // no _meta
  json old = testing::ModernMeta();
  old["io.modelcontextprotocol/protocolVersion"] = "2025-11-25";
  refused(ModernRequest(3, "tools/list", {}, old), rpc_code::kUnsupportedProtocolVersion, 400);
  json no_version = ModernRequest(4, "tools/list");
  no_version.erase("jsonrpc");
  refused(no_version, rpc_code::kInvalidRequest, 400);
  refused(ModernRequest(5, "ping"), rpc_code::kMethodNotFound, 404);
  refused(ModernRequest(6, "tools/call", {{"name", "no_such_tool"}}), rpc_code::kInvalidParams,
          200);
  refused(ModernRequest(7, "tools/call", {{"name", "test_missing_capability"}}),
          rpc_code::kMissingClientCapability, 400);

  // A notification is refused for its envelope only.
  ModernCheck note = dispatcher_.CheckModern(testing::Notification("notifications/cancelled"));
  EXPECT_FALSE(note.refusal);
  EXPECT_FALSE(note.meta);
}

TEST_F(ModernDispatcherTest, RemovedAndUnknownMethodsAreNotFound) {
  for (const char* method : {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                             "resources/unsubscribe", "prompts/list", "tasks/list", "x/y"}) {
    json response = Handle(ModernRequest("r", method));
    EXPECT_EQ(response["error"]["code"], rpc_code::kMethodNotFound) << method;
    EXPECT_EQ(response["id"], "r");
    EXPECT_EQ(Dispatcher::ModernHttpStatus(response), 404);
  }
}

TEST_F(ModernDispatcherTest, ListsAndReadsCarryCachingHints) {
  json tools = Handle(ModernRequest(1, "tools/list"))["result"];
  EXPECT_EQ(tools["resultType"], "complete");
  EXPECT_EQ(tools["cacheScope"], "public");
  EXPECT_GT(tools["ttlMs"].get<std::int64_t>(), 0);
  EXPECT_FALSE(tools["tools"].empty());
  for (const char* method : {"resources/list", "resources/templates/list"}) {
    json result = Handle(ModernRequest(2, method))["result"];
    EXPECT_EQ(result["cacheScope"], "private") << method;
    EXPECT_EQ(result["ttlMs"], 0) << method;
    EXPECT_EQ(result["resultType"], "complete") << method;
  }
  json read = Handle(ModernRequest(3, "resources/read", {{"uri", "test://static-text"}}))["result"];
  EXPECT_EQ(read["cacheScope"], "private");
  EXPECT_FALSE(read["contents"].empty());
}

TEST_F(ModernDispatcherTest, ResourceNotFoundIsInvalidParamsHereAndMinus32002InLegacy) {
  json response = Handle(ModernRequest(4, "resources/read", {{"uri", "test://nope"}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kInvalidParams);
  EXPECT_EQ(response["error"]["data"]["uri"], "test://nope");
  EXPECT_EQ(Dispatcher::ModernHttpStatus(response), 200);

  Session legacy;
  NullOutbound out;
  dispatcher_.Handle(legacy, testing::InitializeRequest(), out);
  auto old = dispatcher_.Handle(
      legacy, testing::Request(5, "resources/read", {{"uri", "test://nope"}}), out);
  EXPECT_EQ((*old)["error"]["code"], rpc_code::kResourceNotFound);
  auto legacy_list = dispatcher_.Handle(legacy, testing::Request(6, "tools/list"), out);
  EXPECT_FALSE((*legacy_list)["result"].contains("resultType"));  // legacy answers unchanged
  EXPECT_FALSE((*legacy_list)["result"].contains("ttlMs"));
}

TEST_F(ModernDispatcherTest, ToolResultsCarryResultType) {
  json response = Handle(ModernRequest(1, "tools/call", {{"name", "test_simple_text"}}));
  EXPECT_EQ(response["result"]["resultType"], "complete");
  EXPECT_EQ(response["result"]["content"][0]["type"], "text");
  response = Handle(ModernRequest(2, "tools/call", {{"name", "test_error_handling"}}));
  EXPECT_EQ(response["result"]["resultType"], "complete");
  EXPECT_EQ(response["result"]["isError"], true);
  response = Handle(ModernRequest(3, "tools/call", {{"name", "no_such_tool"}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kInvalidParams);
}

TEST_F(ModernDispatcherTest, LogsLeaveOnlyWhenTheRequestNamesALevel) {
  Handle(ModernRequest(1, "tools/call", {{"name", "test_logging_tool"}}));
  EXPECT_TRUE(out_.WithMethod("notifications/message").empty());
  json meta = testing::ModernMeta();
  meta["io.modelcontextprotocol/logLevel"] = "info";
  Handle(ModernRequest(2, "tools/call", {{"name", "test_logging_tool"}}, meta));
  EXPECT_EQ(out_.WithMethod("notifications/message").size(), 2u);
  // The level of one request does not carry over to the next.
  meta["io.modelcontextprotocol/logLevel"] = "error";
  Handle(ModernRequest(3, "tools/call", {{"name", "test_logging_tool"}}, meta));
  Handle(ModernRequest(4, "tools/call", {{"name", "test_logging_tool"}}));
  EXPECT_EQ(out_.WithMethod("notifications/message").size(), 2u);
}

TEST_F(ModernDispatcherTest, ACapabilityCountsOnlyWhenThisRequestDeclaresIt) {
  json response = Handle(ModernRequest(1, "tools/call", {{"name", "test_missing_capability"}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kMissingClientCapability);
  EXPECT_TRUE(response["error"]["data"]["requiredCapabilities"]["sampling"].is_object());
  EXPECT_EQ(Dispatcher::ModernHttpStatus(response), 400);
  response = Handle(ModernRequest(2, "tools/call", {{"name", "test_missing_capability"}},
                                  testing::ModernMeta({{"sampling", json::object()}})));
  EXPECT_EQ(response["result"]["resultType"], "complete");
  // Declared before, not now: refused again.
  response = Handle(ModernRequest(3, "tools/call", {{"name", "test_missing_capability"}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kMissingClientCapability);
}

TEST_F(ModernDispatcherTest, NotificationsAndResponsesGetNoAnswer) {
  EXPECT_TRUE(Handle(testing::Notification("notifications/initialized")).is_null());
  EXPECT_TRUE(Handle(json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}).is_null());
  // An invalid envelope still gets its error.
  EXPECT_EQ(Handle(json{{"jsonrpc", "1.0"}, {"id", 1}, {"method", "x"}})["error"]["code"],
            rpc_code::kInvalidRequest);
}

// ---- multi round-trip ----

TEST_F(ModernDispatcherTest, InputRequiredRoundTripWithASealedState) {
  const json caps = {{"elicitation", json::object()}};
  json first =
      Handle(ModernRequest(1, "tools/call", {{"name", "test_input_required_result_request_state"}},
                           testing::ModernMeta(caps)));
  const json& round1 = first["result"];
  EXPECT_EQ(round1["resultType"], "input_required");
  ASSERT_TRUE(round1["requestState"].is_string());
  // The state the tool wrote ("confirm-round") never leaves in the clear.
  EXPECT_EQ(round1["requestState"].get<std::string>().find("confirm-round"), std::string::npos);
  json answers = {{"confirm", {{"action", "accept"}, {"content", {{"ok", true}}}}}};
  json second = Handle(ModernRequest(2, "tools/call",
                                     {{"name", "test_input_required_result_request_state"},
                                      {"inputResponses", answers},
                                      {"requestState", round1["requestState"]}},
                                     testing::ModernMeta(caps)));
  EXPECT_EQ(second["result"]["resultType"], "complete");
  EXPECT_NE(second["result"]["content"][0]["text"].get<std::string>().find("state-ok"),
            std::string::npos);
  // Altered: -32602 before the tool runs.
  json tampered =
      Handle(ModernRequest(3, "tools/call",
                           {{"name", "test_input_required_result_request_state"},
                            {"inputResponses", answers},
                            {"requestState", round1["requestState"].get<std::string>() + "x"}},
                           testing::ModernMeta(caps)));
  EXPECT_EQ(tampered["error"]["code"], rpc_code::kInvalidParams);
  // Sealed for this tool: useless with another.
  json other_tool = Handle(ModernRequest(4, "tools/call",
                                         {{"name", "test_input_required_result_tampered_state"},
                                          {"inputResponses", answers},
                                          {"requestState", round1["requestState"]}},
                                         testing::ModernMeta(caps)));
  EXPECT_EQ(other_tool["error"]["code"], rpc_code::kInvalidParams);
  // ... and for this principal: useless to another token.
  Session bob("bob");
  auto foreign =
      dispatcher_.HandleModern(bob,
                               ModernRequest(5, "tools/call",
                                             {{"name", "test_input_required_result_request_state"},
                                              {"inputResponses", answers},
                                              {"requestState", round1["requestState"]}},
                                             testing::ModernMeta(caps)),
                               out_);
  EXPECT_EQ((*foreign)["error"]["code"], rpc_code::kInvalidParams);
}

// Replicas behind a balancer: the second round of a call may reach another replica. With the
// same key file it opens there; with each process's random key it does not.
TEST(RequestStateAcrossReplicasTest, ARoundTripOpensOnAnotherReplicaWithTheSameKeyOnly) {
  const std::string key(32, 'k');
  Dispatcher r1 = MakeFixtureDispatcher(key);
  Dispatcher r2 = MakeFixtureDispatcher(key);
  Dispatcher lone = MakeFixtureDispatcher();
  Session calls("alice");
  RecordingOutbound out;
  const json caps = {{"elicitation", json::object()}};
  const char* tool = "test_input_required_result_request_state";
  auto first = r1.HandleModern(
      calls, ModernRequest(1, "tools/call", {{"name", tool}}, testing::ModernMeta(caps)), out);
  ASSERT_TRUE(first.has_value());
  const json state = (*first)["result"]["requestState"];
  ASSERT_TRUE(state.is_string()) << first->dump();
  const json second = ModernRequest(
      2, "tools/call",
      {{"name", tool},
       {"inputResponses", {{"confirm", {{"action", "accept"}, {"content", {{"ok", true}}}}}}},
       {"requestState", state}},
      testing::ModernMeta(caps));
  auto on_r2 = r2.HandleModern(calls, second, out);
  ASSERT_TRUE(on_r2.has_value());
  EXPECT_EQ((*on_r2)["result"]["resultType"], "complete") << on_r2->dump();
  auto on_lone = lone.HandleModern(calls, second, out);
  ASSERT_TRUE(on_lone.has_value());
  EXPECT_EQ((*on_lone)["error"]["code"], rpc_code::kInvalidParams) << on_lone->dump();
}

// server.request_state_key_file, read at start-up: the file's bytes, or a refusal naming it.
TEST(RequestStateKeyFileTest, AKeyFileIsReadWholeAndAMissingShortOrOddOneRefused) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/request-state-good.key";
  std::ofstream(good) << std::string(64, 'a') << "\n";
  auto key = ReadRequestStateKey(good);
  ASSERT_TRUE(key.ok()) << key.error().ToString();
  EXPECT_EQ(*key, std::string(64, 'a') + "\n");

  const std::string missing = dir + "/request-state-missing.key";
  auto absent = ReadRequestStateKey(missing);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.error().message().find(missing), std::string::npos);
  EXPECT_NE(absent.error().message().find("cannot be opened"), std::string::npos);

  const std::string short_key = dir + "/request-state-short.key";
  std::ofstream(short_key) << std::string(31, 'a');
  auto too_short = ReadRequestStateKey(short_key);
  ASSERT_FALSE(too_short.ok());
  EXPECT_NE(too_short.error().message().find("holds 31 bytes"), std::string::npos)
      << too_short.error().message();

  const std::string long_key = dir + "/request-state-long.key";
  std::ofstream(long_key) << std::string(kMaxRequestStateKeyBytes + 1, 'a');
  EXPECT_FALSE(ReadRequestStateKey(long_key).ok());

  auto directory = ReadRequestStateKey(dir);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.error().message().find("not a regular file"), std::string::npos)
      << directory.error().message();
  for (const auto& path : {good, short_key, long_key}) std::remove(path.c_str());
}

TEST_F(ModernDispatcherTest, InputRequestsOnlyForDeclaredCapabilities) {
  // The fixture asks for an elicitation; a request without the capability gets -32021, not a
  // question it cannot answer.
  json response =
      Handle(ModernRequest(1, "tools/call", {{"name", "test_input_required_result_elicitation"}}));
  EXPECT_EQ(response["error"]["code"], rpc_code::kMissingClientCapability);
  EXPECT_TRUE(response["error"]["data"]["requiredCapabilities"]["elicitation"].is_object());
  response = Handle(ModernRequest(2, "tools/call",
                                  {{"name", "test_input_required_result_multiple_inputs"}},
                                  testing::ModernMeta({{"sampling", json::object()}})));
  const json& requests = response["result"]["inputRequests"];
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests["greeting"]["method"], "sampling/createMessage");
}

TEST_F(ModernDispatcherTest, LegacyClientsNeverSeeInputRequired) {
  Session legacy;
  NullOutbound out;
  dispatcher_.Handle(legacy, testing::InitializeRequest(), out);
  auto response = dispatcher_.Handle(
      legacy, testing::CallTool(1, "test_input_required_result_elicitation", json::object()), out);
  EXPECT_EQ((*response)["result"]["isError"], true);
  EXPECT_FALSE((*response)["result"].contains("inputRequests"));
}

TEST(RequestStateSealerTest, OpensOnlyWhatItSealedForThatPrincipalToolAndTime) {
  auto now = std::chrono::system_clock::now();
  RequestStateSealer sealer("k", std::chrono::seconds(60), [&now] { return now; });
  std::string sealed = sealer.Seal("alice", "tool", "state \"1\"");
  EXPECT_EQ(sealer.Open("alice", "tool", sealed).value(), "state \"1\"");
  EXPECT_FALSE(sealer.Open("bob", "tool", sealed).ok());
  EXPECT_FALSE(sealer.Open("alice", "other", sealed).ok());
  EXPECT_FALSE(sealer.Open("alice", "tool", sealed + "0").ok());
  EXPECT_FALSE(sealer.Open("alice", "tool", "").ok());
  EXPECT_FALSE(sealer.Open("alice", "tool", "...").ok());
  RequestStateSealer other_key("k2", std::chrono::seconds(60), [&now] { return now; });
  EXPECT_FALSE(other_key.Open("alice", "tool", sealed).ok());
  now += std::chrono::seconds(61);
  EXPECT_FALSE(sealer.Open("alice", "tool", sealed).ok());
}

}  // namespace
}  // namespace sandbox::mcp
