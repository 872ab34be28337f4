#include "sandbox/http/http_helpers.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "sandbox/http/run_registry.h"

namespace sandbox::http {
namespace {

TEST(HttpHelpersTest, MediaTypeIsLowerCasedWithoutParameters) {
  EXPECT_EQ(MediaType(" Application/JSON ; charset=utf-8"), "application/json");
  EXPECT_EQ(MediaType(""), "");
}

TEST(HttpHelpersTest, AcceptsTakesWildcards) {
  EXPECT_TRUE(Accepts("application/json, text/event-stream", "text/event-stream"));
  EXPECT_TRUE(Accepts("*/*", "application/json"));
  EXPECT_TRUE(Accepts("text/*;q=0.5", "text/event-stream"));
  EXPECT_FALSE(Accepts("application/json", "text/event-stream"));
  EXPECT_FALSE(Accepts("", "application/json"));
}

// A stream only for a client that names it: no wildcard, and not refused with q=0.
TEST(HttpHelpersTest, ListsWantsTheTypeItselfWithQAboveZero) {
  EXPECT_TRUE(Lists("text/event-stream", "text/event-stream"));
  EXPECT_TRUE(Lists("application/json, Text/Event-Stream;q=0.5", "text/event-stream"));
  EXPECT_TRUE(Lists("text/event-stream;q=0.001", "text/event-stream"));
  EXPECT_FALSE(Lists("*/*", "text/event-stream"));
  EXPECT_FALSE(Lists("text/*", "text/event-stream"));
  EXPECT_FALSE(Lists("text/event-stream;q=0", "text/event-stream"));
  EXPECT_FALSE(Lists("text/event-stream; q=0.000", "text/event-stream"));
  EXPECT_FALSE(Lists("", "text/event-stream"));
}

TEST(HttpHelpersTest, JsonBodyIsJsonAnyPlusJsonOrUntyped) {
  httplib::Request req;
  EXPECT_TRUE(IsJsonBody(req));
  req.set_header("Content-Type", "application/json; charset=utf-8");
  EXPECT_TRUE(IsJsonBody(req));
  req.headers.clear();
  req.set_header("Content-Type", "application/vnd.api+json");
  EXPECT_TRUE(IsJsonBody(req));
  req.headers.clear();
  req.set_header("Content-Type", "text/plain");
  EXPECT_FALSE(IsJsonBody(req));
}

TEST(HttpHelpersTest, SendJsonReplacesInvalidUtf8) {
  httplib::Response res;
  SendJson(res, 201, nlohmann::json{{"text", std::string("a\xff")}});
  EXPECT_EQ(res.status, 201);
  EXPECT_EQ(res.get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res.body, "{\"text\":\"a\xEF\xBF\xBD\"}");
}

TEST(RunRegistryTest, ShutdownCancelsRunningRunsAndRefusesNewOnes) {
  auto registry = std::make_shared<RunRegistry>();
  {
    RunRegistry::Entry first(registry);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(registry->size(), 1U);
    registry->Shutdown();
    EXPECT_TRUE(first.token().IsCancelled());
    RunRegistry::Entry late(registry);
    EXPECT_FALSE(late.ok());
  }
  EXPECT_EQ(registry->size(), 0U);
}

TEST(RunRegistryTest, AnEntryLeavesWhenItEnds) {
  auto registry = std::make_shared<RunRegistry>();
  std::shared_ptr<exec::CancelToken> token;
  {
    RunRegistry::Entry run(registry);
    token = run.shared_token();
  }
  EXPECT_EQ(registry->size(), 0U);
  registry->Shutdown();
  EXPECT_FALSE(token->IsCancelled());  // it had ended: nothing to cancel
}

}  // namespace
}  // namespace sandbox::http
