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
