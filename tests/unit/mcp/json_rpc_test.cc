#include "sandbox/mcp/json_rpc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sandbox/core/utf8.h"
#include "sandbox/mcp/protocol_version.h"

namespace sandbox::mcp {
namespace {

TEST(JsonRpcTest, ClassifiesRequestsNotificationsAndResponses) {
  auto request = ParseMessage(json::parse(R"({"jsonrpc":"2.0","id":"7","method":"ping"})"));
  ASSERT_TRUE(std::holds_alternative<Message>(request));
  EXPECT_EQ(std::get<Message>(request).kind, MessageKind::kRequest);
  EXPECT_EQ(std::get<Message>(request).id, json("7"));

  auto notification = ParseMessage(json::parse(R"({"jsonrpc":"2.0","method":"n"})"));
  EXPECT_EQ(std::get<Message>(notification).kind, MessageKind::kNotification);

  auto response = ParseMessage(json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  EXPECT_EQ(std::get<Message>(response).kind, MessageKind::kResponse);
}

TEST(JsonRpcTest, RejectsBrokenEnvelopesNamingTheField) {
  auto no_version = ParseMessage(json::parse(R"({"id":3,"method":"ping"})"));
  ASSERT_TRUE(std::holds_alternative<InvalidMessage>(no_version));
  EXPECT_EQ(std::get<InvalidMessage>(no_version).error.code, rpc_code::kInvalidRequest);
  EXPECT_EQ(std::get<InvalidMessage>(no_version).id, json(3));  // still answerable
  EXPECT_NE(std::get<InvalidMessage>(no_version).error.message.find("jsonrpc"), std::string::npos);

  auto bad_method = ParseMessage(json::parse(R"({"jsonrpc":"2.0","id":1,"method":5})"));
  EXPECT_NE(std::get<InvalidMessage>(bad_method).error.message.find("method"), std::string::npos);

  auto bad_id = ParseMessage(json::parse(R"({"jsonrpc":"2.0","id":{},"method":"ping"})"));
  EXPECT_TRUE(std::get<InvalidMessage>(bad_id).id.is_null());

  auto bad_params =
      ParseMessage(json::parse(R"({"jsonrpc":"2.0","id":1,"method":"x","params":3})"));
  EXPECT_NE(std::get<InvalidMessage>(bad_params).error.message.find("params"), std::string::npos);

  EXPECT_TRUE(std::holds_alternative<InvalidMessage>(ParseMessage(json::array())));
}

TEST(JsonRpcTest, IdKeysTellNumbersAndStringsApart) {
  EXPECT_NE(IdKey(json(1)), IdKey(json("1")));
  EXPECT_EQ(IdKey(json(1)), IdKey(json::parse("1")));
}

TEST(JsonRpcTest, ParseJsonTextRejectsInvalidUtf8WithoutThrowing) {
  EXPECT_FALSE(ParseJsonText("{\"code\":\"\xff\"}").ok());
  EXPECT_FALSE(ParseJsonText("{").ok());
  EXPECT_TRUE(ParseJsonText("{\"a\":1}").ok());
}

TEST(JsonRpcTest, ParseJsonTextRefusesDeepNestingAsParseError) {
  auto parsed = ParseJsonText(std::string(100000, '[') + std::string(100000, ']'));
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(RpcParseError(parsed.error()), ::testing::HasSubstr("deeper than 64 levels"));
}

TEST(JsonRpcTest, DumpJsonReplacesInvalidUtf8) {
  json value = {{"text", std::string("a\xff")}};
  EXPECT_EQ(DumpJson(value), "{\"text\":\"a\xEF\xBF\xBD\"}");
}

TEST(ProtocolVersionTest, EchoesSupportedVersionsAndOtherwiseAnswersTheLatest) {
  for (auto version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    EXPECT_EQ(NegotiateProtocolVersion(version), version);
  }
  EXPECT_EQ(NegotiateProtocolVersion("2099-01-01"), "2025-11-25");
  EXPECT_EQ(NegotiateProtocolVersion(""), "2025-11-25");
  EXPECT_TRUE(AllowsBatches("2025-03-26"));
  EXPECT_FALSE(AllowsBatches("2025-06-18"));
  EXPECT_FALSE(AllowsBatches("2024-11-05"));
}

TEST(Utf8Test, RepairsInvalidSequencesWithReplacementCharacters) {
  const std::string kFffd = "\xEF\xBF\xBD";
  EXPECT_EQ(RepairUtf8("plain"), "plain");
  EXPECT_EQ(RepairUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(RepairUtf8("a\xff"
                       "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(RepairUtf8("\xC0\xAF"), kFffd + kFffd);               // overlong
  EXPECT_EQ(RepairUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);   // surrogate
  EXPECT_EQ(RepairUtf8("\xE2\x82"), kFffd);                       // truncated: one maximal subpart
  EXPECT_EQ(RepairUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // emoji intact
  EXPECT_TRUE(IsValidUtf8(RepairUtf8(std::string("\x80\xBF\xFE\xF5\xF4\x90\x80\x80", 8))));
}

TEST(Utf8Test, CompletePrefixStopsBeforeAnUnfinishedCharacter) {
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xE2\x82"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xE2\x82\xAC"), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xff"), 2u);  // invalid, not unfinished: nothing to wait for
}

}  // namespace
}  // namespace sandbox::mcp
