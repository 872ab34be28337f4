#include "sandbox/http/request_guard.h"

#include <gtest/gtest.h>

namespace sandbox::http {
namespace {

std::optional<Rejection> Check(const RequestGuard& guard, std::string_view host,
                               std::optional<std::string_view> origin = std::nullopt,
                               std::string_view auth = "", std::string_view path = "/mcp") {
  return guard.Check(path, host, origin.has_value(), origin.value_or(""), auth);
}

TEST(RequestGuardTest, RequestIdIsTheClientsWhenSafeElseRandom) {
  EXPECT_EQ(RequestIdFor("trace-42.a_B"), "trace-42.a_B");
  const std::string fresh = RequestIdFor("");
  EXPECT_EQ(fresh.size(), 16U);
  EXPECT_EQ(fresh.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(RequestIdFor(""), fresh);
  // Nothing that could split a log line or a header, nothing unbounded.
  for (std::string bad : {std::string("a b"), std::string("x\r\nSet-Cookie: y"),
                          std::string("{\"json\":1}"), std::string(65, 'a')}) {
    const std::string id = RequestIdFor(bad);
    EXPECT_NE(id, bad);
    EXPECT_EQ(id.size(), 16U);
  }
}

TEST(RequestGuardTest, AcceptsLoopbackHostsOnly) {
  RequestGuard guard(GuardOptions{});
  for (auto host : {"localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:8080", "127.1.2.3:9",
                    "[::1]", "[::1]:8080", "LOCALHOST:1"}) {
    EXPECT_FALSE(Check(guard, host)) << host;
  }
  for (auto host : {"evil.example.com", "evil.example.com:8080", "127.0.0.1.evil.com",
                    "localhost.evil.com", "10.0.0.1", "", "[::2]:80", "127.0.0.256"}) {
    auto rejection = Check(guard, host);
    ASSERT_TRUE(rejection) << host;
    EXPECT_EQ(rejection->status, 403);
  }
}

TEST(RequestGuardTest, AllowedHostsExtendTheList) {
  RequestGuard guard(GuardOptions{"", {"sandbox.internal", "box:9000"}, {}, {}, {}, {}});
  EXPECT_FALSE(Check(guard, "sandbox.internal:8080"));
  EXPECT_FALSE(Check(guard, "box:9000"));
  EXPECT_TRUE(Check(guard, "box:9001"));
}

TEST(RequestGuardTest, OriginAbsentOrLoopbackOrAllowed) {
  RequestGuard guard(GuardOptions{"", {}, {"https://app.example.com"}, {}, {}, {}});
  EXPECT_FALSE(Check(guard, "localhost"));
  EXPECT_FALSE(Check(guard, "localhost", "http://localhost:6274"));
  EXPECT_FALSE(Check(guard, "localhost", "http://127.0.0.1:8080"));
  EXPECT_FALSE(Check(guard, "localhost", "http://[::1]:3000"));
  EXPECT_FALSE(Check(guard, "localhost", "https://app.example.com/"));
  for (auto origin : {"http://evil.example.com", "null", "", "file://", "http://localhost.evil.com",
                      "https://app.example.com.evil.com"}) {
    auto rejection = Check(guard, "localhost", origin);
    ASSERT_TRUE(rejection) << origin;
    EXPECT_EQ(rejection->status, 403);
  }
}

TEST(RequestGuardTest, BearerTokenWhenConfigured) {
  RequestGuard guard(GuardOptions{"s3cret-token-0123456789", {}, {}, {"/healthz"}, {}, {}});
  EXPECT_EQ(Check(guard, "localhost")->status, 401);
  EXPECT_EQ(Check(guard, "localhost", std::nullopt, "Bearer wrong")->status, 401);
  EXPECT_EQ(Check(guard, "localhost", std::nullopt, "Bearer s3cret-token-012345678")->status, 401);
  EXPECT_EQ(Check(guard, "localhost", std::nullopt, "Basic s3cret-token-0123456789")->status, 401);
  EXPECT_FALSE(Check(guard, "localhost", std::nullopt, "Bearer s3cret-token-0123456789"));
  EXPECT_FALSE(Check(guard, "localhost", std::nullopt, "bearer s3cret-token-0123456789"));
  // Health probes need nothing.
  EXPECT_FALSE(Check(guard, "10.1.2.3", std::nullopt, "", "/healthz"));
  // Host is checked before the token: a rebinding attempt learns nothing about auth.
  EXPECT_EQ(Check(guard, "evil.example.com")->status, 403);
}

TEST(RequestGuardTest, AdminPathsTakeAdminTokensOnly) {
  GuardOptions options{"run-token-0123456789", {}, {},
                       {"/healthz"},           {}, {{"ops", "admin-token-0123456789"}}};
  RequestGuard guard(options);
  const std::string_view admin = "/admin/pools";
  EXPECT_EQ(Check(guard, "localhost", std::nullopt, "", admin)->status, 401);
  EXPECT_EQ(Check(guard, "localhost", std::nullopt, "Bearer run-token-0123456789", admin)->status,
            401);
  EXPECT_FALSE(Check(guard, "localhost", std::nullopt, "Bearer admin-token-0123456789", admin));
  EXPECT_EQ(guard.AdminPrincipal("Bearer admin-token-0123456789"), "ops");
  EXPECT_EQ(guard.AdminPrincipal("Bearer run-token-0123456789"), "");
  // An admin token is no run token.
  EXPECT_EQ(Check(guard, "localhost", std::nullopt, "Bearer admin-token-0123456789")->status, 401);
  EXPECT_EQ(guard.Principal("Bearer admin-token-0123456789"), "");
  // Host checks come first on admin paths too.
  EXPECT_EQ(Check(guard, "evil.example.com", std::nullopt, "Bearer admin-token-0123456789", admin)
                ->status,
            403);
  EXPECT_TRUE(IsAdminPath("/admin"));
  EXPECT_TRUE(IsAdminPath("/admin/pools/x/drain"));
  EXPECT_FALSE(IsAdminPath("/administrator"));
}

TEST(RequestGuardTest, AdminPathsAreNotFoundWithoutAdminTokens) {
  RequestGuard guard(GuardOptions{"run-token-0123456789", {}, {}, {"/healthz"}, {}, {}});
  auto refused = Check(guard, "localhost", std::nullopt, "Bearer run-token-0123456789", "/admin");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 404);
  EXPECT_NE(refused->message.find("admin API is disabled"), std::string::npos);
  EXPECT_FALSE(guard.admin_enabled());
}

TEST(RequestGuardTest, SetTokensReplacesEveryTokenAtOnce) {
  RequestGuard guard(GuardOptions{"run-token-0123456789", {}, {}, {"/healthz"}, {}, {}});
  guard.SetTokens("new-run-token-0123456789", {{"alice", "alice-token-0123456789"}},
                  {{"ops", "admin-token-0123456789"}});
  EXPECT_EQ(guard.Principal("Bearer run-token-0123456789"), "");
  EXPECT_EQ(guard.Principal("Bearer new-run-token-0123456789"), "default");
  EXPECT_EQ(guard.Principal("Bearer alice-token-0123456789"), "alice");
  EXPECT_TRUE(guard.admin_enabled());
  guard.SetTokens("", {}, {});
  EXPECT_FALSE(guard.authenticates());
  EXPECT_EQ(guard.Principal(""), "local");
}

TEST(RequestGuardTest, NamedTokensAreEachAPrincipal) {
  RequestGuard guard(
      GuardOptions{"s3cret-token-0123456789",
                   {},
                   {},
                   {"/healthz"},
                   {{"alice", "alice-token-0123456789"}, {"bob", "bob-token-0123456789ab"}},
                   {}});
  EXPECT_TRUE(guard.authenticates());
  EXPECT_FALSE(Check(guard, "localhost", std::nullopt, "Bearer alice-token-0123456789"));
  EXPECT_FALSE(Check(guard, "localhost", std::nullopt, "Bearer bob-token-0123456789ab"));
  EXPECT_FALSE(Check(guard, "localhost", std::nullopt, "Bearer s3cret-token-0123456789"));
  EXPECT_EQ(Check(guard, "localhost", std::nullopt, "Bearer carol-token-0123456789")->status, 401);
  EXPECT_EQ(Check(guard, "localhost")->status, 401);

  EXPECT_EQ(guard.Principal("Bearer alice-token-0123456789"), "alice");
  EXPECT_EQ(guard.Principal("bearer  bob-token-0123456789ab "), "bob");
  EXPECT_EQ(guard.Principal("Bearer s3cret-token-0123456789"), "default");
  EXPECT_EQ(guard.Principal("Bearer alice-token-012345678"), "");  // a prefix is no match
  EXPECT_EQ(guard.Principal(""), "");
  EXPECT_EQ(guard.Resolver()("Bearer alice-token-0123456789"), "alice");
}

TEST(RequestGuardTest, NamedTokensWithoutTheDefaultToken) {
  RequestGuard guard(GuardOptions{"", {}, {}, {}, {{"ci", "ci-token-0123456789abc"}}, {}});
  EXPECT_EQ(Check(guard, "localhost")->status, 401);
  EXPECT_FALSE(Check(guard, "localhost", std::nullopt, "Bearer ci-token-0123456789abc"));
  EXPECT_EQ(guard.Principal("Bearer ci-token-0123456789abc"), "ci");
}

TEST(RequestGuardTest, WithoutTokensEveryoneIsLocal) {
  RequestGuard guard(GuardOptions{});
  EXPECT_FALSE(guard.authenticates());
  EXPECT_EQ(guard.Principal(""), "local");
  EXPECT_EQ(guard.Principal("Bearer anything-at-all-1234"), "local");
}

}  // namespace
}  // namespace sandbox::http
