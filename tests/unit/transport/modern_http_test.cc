// MCP 2026-07-28 on Streamable HTTP: the era chosen per POST, the standard headers checked
// against the body, the revision's HTTP statuses (400 for header, _meta and version errors, 404
// for unknown methods), every error echoing the request id, no transport session; and the legacy
// era unchanged beside it.
#include <gtest/gtest.h>

#include "transport/mcp_headers.h"
#include "unit/transport/http_fixture.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;
using http::GuardOptions;
using mcp::testing::ModernRequest;
using testing::HttpTransportTest;
using testing::ParseSse;

// The headers a 2026-07-28 client sends with `message`.
httplib::Headers ModernHeaders(const json& message) {
  httplib::Headers headers{{"MCP-Protocol-Version", "2026-07-28"},
                           {"Mcp-Method", message["method"].get<std::string>()}};
  std::string member(McpNameMember(message["method"].get<std::string>()));
  if (!member.empty()) headers.emplace("Mcp-Name", message["params"][member].get<std::string>());
  return headers;
}

class ModernHttpTest : public HttpTransportTest {
 protected:
  httplib::Result PostModern(const json& message, httplib::Headers extra = {},
                             bool standard_headers = true) {
    httplib::Headers headers = standard_headers ? ModernHeaders(message) : httplib::Headers{};
    for (auto& [name, value] : extra) {
      headers.erase(name);
      headers.emplace(name, value);
    }
    return Post(message, headers);
  }
};

TEST_F(ModernHttpTest, DiscoverNeedsNoInitializeAndMintsNoSession) {
  Start();
  auto res = PostModern(ModernRequest(1, "server/discover"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_FALSE(res->has_header("Mcp-Session-Id"));
  json body = json::parse(res->body);
  EXPECT_EQ(body["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(body["result"]["resultType"], "complete");
  EXPECT_EQ(streamable_->session_count(), 0u);
}

TEST_F(ModernHttpTest, MetaErrorsAre400WithTheRequestId) {
  Start();
  json request = mcp::testing::Request(101, "server/discover");  // no _meta
  auto res = PostModern(request);
  EXPECT_EQ(res->status, 400);
  json body = json::parse(res->body);
  EXPECT_EQ(body["error"]["code"], jsonrpc::rpc_code::kInvalidParams);
  EXPECT_EQ(body["id"], 101);
  request = ModernRequest(102, "server/discover");
  request["params"]["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
  res = PostModern(request);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["id"], 102);
}

// A body that is no valid JSON-RPC request is a malformed request however much of it is
// right: 400 with -32600 and the id, with or without params.
TEST_F(ModernHttpTest, AnInvalidEnvelopeIs400WithTheRequestId) {
  Start();
  json with_params = ModernRequest(201, "tools/list");
  with_params.erase("jsonrpc");
  json without_params = mcp::testing::Request(202, "tools/list");
  without_params.erase("jsonrpc");
  without_params.erase("params");
  for (const json& request : {with_params, without_params}) {
    auto res = PostModern(request);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << request;
    json body = json::parse(res->body);
    EXPECT_EQ(body["error"]["code"], jsonrpc::rpc_code::kInvalidRequest) << request;
    EXPECT_EQ(body["id"], request["id"]);
  }
}

TEST_F(ModernHttpTest, VersionHeaderErrors) {
  Start();
  // A version no era knows: -32022 naming every supported one, whatever the body.
  json request = ModernRequest(301, "server/discover");
  request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "v999.0.0";
  auto res = PostModern(request, {{"MCP-Protocol-Version", "v999.0.0"}});
  EXPECT_EQ(res->status, 400);
  json body = json::parse(res->body);
  EXPECT_EQ(body["error"]["code"], jsonrpc::rpc_code::kUnsupportedProtocolVersion);
  EXPECT_EQ(body["error"]["data"]["requested"], "v999.0.0");
  EXPECT_EQ(body["error"]["data"]["supported"][0], "2026-07-28");
  EXPECT_EQ(body["id"], 301);
  // The header and _meta disagree: -32020.
  res = PostModern(request);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["code"], jsonrpc::rpc_code::kHeaderMismatch);
  // A body that names 2026-07-28 without the header: -32020.
  res = PostModern(ModernRequest(303, "tools/list"), {}, false);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["code"], jsonrpc::rpc_code::kHeaderMismatch);
  EXPECT_EQ(json::parse(res->body)["id"], 303);
}

TEST_F(ModernHttpTest, MethodAndNameHeadersMustMatchTheBody) {
  Start();
  json call = ModernRequest(1, "tools/call",
                            {{"name", "run_python"}, {"arguments", {{"code", "print(1)"}}}});
  auto expect_mismatch = [&](httplib::Headers extra, const std::string& why) {
    auto res = PostModern(call, std::move(extra));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << why;
    EXPECT_EQ(json::parse(res->body)["error"]["code"], jsonrpc::rpc_code::kHeaderMismatch) << why;
  };
  expect_mismatch({{"Mcp-Method", "tools/list"}}, "method differs");
  expect_mismatch({{"Mcp-Name", "sandbox_info"}}, "name differs");
  expect_mismatch({{"Mcp-Name", "RUN_PYTHON"}}, "values are case-sensitive");
  expect_mismatch({{"Mcp-Name", "=?base64?!!!?="}}, "invalid base64");
  auto headers = ModernHeaders(call);
  headers.erase("Mcp-Name");
  auto res = Post(call, headers);
  EXPECT_EQ(res->status, 400) << "Mcp-Name missing";
  // Whitespace around a value and base64-wrapped values are accepted.
  res = PostModern(call, {{"Mcp-Name", "=?base64?cnVuX3B5dGhvbg==?="}});
  EXPECT_EQ(res->status, 200) << res->body;
  auto events = ParseSse(res->body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().data["result"]["resultType"], "complete");
  EXPECT_EQ(events.back().data["result"]["structuredContent"]["stdout"], "hello\n");
}

TEST_F(ModernHttpTest, UnknownAndRemovedMethodsAre404) {
  Start();
  for (const char* method : {"initialize", "ping", "logging/setLevel", "unknown/method"}) {
    auto res = PostModern(ModernRequest(500, method));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << method;
    json body = json::parse(res->body);
    EXPECT_EQ(body["error"]["code"], jsonrpc::rpc_code::kMethodNotFound) << method;
    EXPECT_EQ(body["id"], 500) << method;
  }
}

TEST_F(ModernHttpTest, NotificationsAre202AndBatchesAreRefused) {
  Start();
  json note = mcp::testing::Notification("notifications/cancelled", {{"requestId", 1}});
  auto res = Post(
      note, {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "notifications/cancelled"}});
  EXPECT_EQ(res->status, 202);
  json batch = json::array({ModernRequest(1, "tools/list"), ModernRequest(2, "tools/list")});
  res = Post(batch, {{"MCP-Protocol-Version", "2026-07-28"}});
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["code"], jsonrpc::rpc_code::kInvalidRequest);
}

TEST_F(ModernHttpTest, LegacyClientsSeeTheSameAnswers) {
  Start();
  Initialize();
  auto res = Post(mcp::testing::Request(1, "tools/list"));
  EXPECT_EQ(res->status, 200);
  json body = json::parse(res->body);
  EXPECT_FALSE(body["result"].contains("resultType"));
  // A legacy request without a session still gets 400 (now with its id).
  session_.clear();
  res = Post(mcp::testing::Request(9, "tools/list"));
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["id"], 9);
  // initialize under a legacy header still starts a session.
  res = Post(mcp::testing::InitializeRequest(), {{"MCP-Protocol-Version", "2025-06-18"}});
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(res->has_header("Mcp-Session-Id"));
}

TEST_F(ModernHttpTest, ModernCallsActForTheRequestsPrincipal) {
  GuardOptions guard;
  guard.tokens = {{"alice", "token-a"}};
  Start(std::move(guard));
  json call = ModernRequest(1, "tools/call",
                            {{"name", "run_python"}, {"arguments", {{"code", "print(1)"}}}});
  auto headers = ModernHeaders(call);
  auto res = Post(call, headers);
  EXPECT_EQ(res->status, 401);  // the token is checked before any era
  headers.emplace("Authorization", "Bearer token-a");
  res = Post(call, headers);
  EXPECT_EQ(res->status, 200);
  ASSERT_FALSE(service_.requests().empty());
  EXPECT_EQ(service_.requests().back().principal, "alice");
}

// ---- the header checks on their own ----

TEST(McpHeadersTest, DecodesBase64AndTrims) {
  EXPECT_EQ(DecodeMcpHeaderValue("  tools/call\t"), "tools/call");
  EXPECT_EQ(DecodeMcpHeaderValue("=?base64?w6lsw6h2ZQ==?="), "\xc3\xa9l\xc3\xa8ve");
  EXPECT_EQ(DecodeMcpHeaderValue("=?base64?not base64?="), std::nullopt);
  EXPECT_EQ(DecodeMcpHeaderValue("=?base64?"), "=?base64?");  // too short to be wrapped
}

TEST(McpHeadersTest, NameMembersPerMethod) {
  EXPECT_EQ(McpNameMember("tools/call"), "name");
  EXPECT_EQ(McpNameMember("prompts/get"), "name");
  EXPECT_EQ(McpNameMember("resources/read"), "uri");
  EXPECT_EQ(McpNameMember("tasks/get"), "taskId");
  EXPECT_EQ(McpNameMember("tasks/cancel"), "taskId");
  EXPECT_EQ(McpNameMember("tools/list"), "");
}

TEST(McpHeadersTest, ComparesEveryHeaderWithTheBody) {
  std::map<std::string, std::string> sent = {{"Mcp-Method", "resources/read"},
                                             {"Mcp-Name", "file:///a b"},
                                             {"MCP-Protocol-Version", "2026-07-28"}};
  HeaderLookup lookup = [&sent](std::string_view name) -> std::optional<std::string> {
    auto it = sent.find(std::string(name));
    if (it == sent.end()) return std::nullopt;
    return it->second;
  };
  json message = {{"method", "resources/read"}, {"params", {{"uri", "file:///a b"}}}};
  EXPECT_EQ(CheckMcpHeaders(lookup, message, std::string("2026-07-28")), std::nullopt);
  EXPECT_NE(CheckMcpHeaders(lookup, message, std::string("2027-01-01")), std::nullopt);
  sent["Mcp-Name"] = "file:///a";
  auto why = CheckMcpHeaders(lookup, message, std::string("2026-07-28"));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("'file:///a' does not match body value 'file:///a b'"), std::string::npos);
  sent.erase("Mcp-Method");
  EXPECT_NE(CheckMcpHeaders(lookup, message, std::nullopt), std::nullopt);
  // A body without the member is the dispatcher's to refuse, not a header mismatch.
  sent["Mcp-Method"] = "resources/read";
  json no_uri = {{"method", "resources/read"}, {"params", json::object()}};
  EXPECT_EQ(CheckMcpHeaders(lookup, no_uri, std::nullopt), std::nullopt);
}

}  // namespace
}  // namespace sandbox::transport
