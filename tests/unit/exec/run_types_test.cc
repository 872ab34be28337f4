#include "sandbox/exec/run_types.h"

#include <gtest/gtest.h>

#include "sandbox/exec/cancel_token.h"

namespace sandbox::exec {
namespace {

TEST(VerdictTest, NamesRoundTrip) {
  for (auto v :
       {Verdict::kOk, Verdict::kError, Verdict::kTimeout, Verdict::kMemory, Verdict::kOutputLimit,
        Verdict::kCancelled, Verdict::kSignal, Verdict::kInternal}) {
    auto parsed = ParseVerdict(VerdictName(v));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, v);
  }
  EXPECT_EQ(VerdictName(Verdict::kOutputLimit), "output_limit");
  EXPECT_FALSE(ParseVerdict("bogus").has_value());
  // The enum and the names are generated from one list (the protocol schema's verdicts): each
  // enumerator names its verdict.
  const std::pair<Verdict, std::string_view> expected[] = {{Verdict::kOk, "ok"},
                                                           {Verdict::kError, "error"},
                                                           {Verdict::kTimeout, "timeout"},
                                                           {Verdict::kMemory, "memory"},
                                                           {Verdict::kOutputLimit, "output_limit"},
                                                           {Verdict::kCancelled, "cancelled"},
                                                           {Verdict::kSignal, "signal"},
                                                           {Verdict::kInternal, "internal"}};
  EXPECT_EQ(std::size(expected), kVerdictNames.size());
  for (const auto& [verdict, name] : expected) EXPECT_EQ(VerdictName(verdict), name);
}

TEST(CancelTokenTest, FiresCallbacksOnce) {
  CancelToken token;
  int fired = 0;
  token.OnCancel([&] { ++fired; });
  EXPECT_FALSE(token.IsCancelled());
  token.Cancel();
  token.Cancel();
  EXPECT_TRUE(token.IsCancelled());
  EXPECT_EQ(fired, 1);
  token.OnCancel([&] { ++fired; });  // already cancelled: runs at once
  EXPECT_EQ(fired, 2);
}

}  // namespace
}  // namespace sandbox::exec

namespace sandbox::exec {
namespace {

std::string NetworkError(const char* text) {
  auto parsed = ParseNetworkRequest(nlohmann::json::parse(text));
  return parsed.ok() ? "" : parsed.error().message();
}

TEST(NetworkRequestTest, NoneOrEntriesToKeepAndEveryRefusalNamesItsPlace) {
  auto off = ParseNetworkRequest("none");
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->off);
  auto some = ParseNetworkRequest(nlohmann::json::parse(R"({"allow": ["pypi.org"],
                                                            "deny": ["x.org"]})"));
  ASSERT_TRUE(some.ok());
  EXPECT_FALSE(some->off);
  EXPECT_EQ(some->allow, std::vector<std::string>{"pypi.org"});
  EXPECT_EQ(some->deny, std::vector<std::string>{"x.org"});
  EXPECT_EQ(NetworkError(R"("all")"), "network: expected \"none\" or an object {allow, deny}");
  EXPECT_EQ(NetworkError("42"), "network: expected \"none\" or an object {allow, deny}");
  EXPECT_EQ(NetworkError(R"({"allow": "pypi.org"})"),
            "network.allow: expected an array of entries");
  EXPECT_EQ(NetworkError(R"({"allow": ["a", 1]})"), "network.allow[1]: expected a string");
  EXPECT_EQ(NetworkError(R"({"allw": []})"), "network.allw: unknown field (expected allow, deny)");
  EXPECT_EQ(NetworkError(R"({"deny": ["x"]})").rfind("network.allow: required", 0), 0u);
  std::string many = R"({"allow": [)";
  for (int i = 0; i < 257; ++i) many += (i ? ",\"a\"" : "\"a\"");
  EXPECT_EQ(NetworkError((many + "]}").c_str()), "network.allow: more than 256 entries");
  EXPECT_TRUE(NetworkRequestSchema().contains("oneOf"));
}

}  // namespace
}  // namespace sandbox::exec
