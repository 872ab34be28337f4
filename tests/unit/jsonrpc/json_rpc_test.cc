#include "sandbox/jsonrpc/json_rpc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sandbox::jsonrpc {
namespace {

using json = nlohmann::json;

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

}  // namespace
}  // namespace sandbox::jsonrpc
