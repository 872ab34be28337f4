#include "sandbox/service/request_resolver.h"

#include <gtest/gtest.h>

#include <string>

namespace sandbox::service {
namespace {

config::Config TwoPools() {
  config::Config c;
  c.pools[0].name = "default";
  c.pools[0].limits.timeout_s = 30;
  c.pools[0].limits.memory_bytes = 512LL << 20;
  c.pools[0].max_limits.timeout_s = 60;
  c.pools[0].max_limits.output_bytes = 1 << 20;
  config::PoolConfig big = c.pools[0];
  big.name = "big";
  big.limits.memory_bytes = 2LL << 30;
  c.pools.push_back(big);
  return c;
}

void ExpectInvalid(const Status& status, const std::string& field) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.error().message().rfind(field + ":", 0), 0u) << status.error().message();
}

template <typename T>
Status StatusOf(const Result<T>& result) {
  return result.ok() ? OkStatus() : Status(result.error());
}

TEST(RequestResolverTest, DefaultsComeFromThePoolNamedOrTheDefaultOne) {
  const auto config = TwoPools();
  RequestResolver resolver(config, {});
  auto plain = resolver.Resolve("", {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->memory_bytes, 512LL << 20);
  auto big = resolver.Resolve("big", {});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->memory_bytes, 2LL << 30);
  auto unknown = resolver.Resolve("nope", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(), "unknown pool \"nope\"");
}

TEST(RequestResolverTest, CurrentLimitsReplaceTheConfiguredOnes) {
  const auto config = TwoPools();
  RequestResolver resolver(config, {}, [](const config::PoolConfig& pc) {
    config::Limits l = pc.limits;
    l.timeout_s = 7;
    return l;
  });
  EXPECT_EQ(resolver.Resolve("", {})->timeout_s, 7);
}

TEST(RequestResolverTest, OverridesStayWithinThePoolsMaxima) {
  const auto config = TwoPools();
  RequestResolver resolver(config, {});
  exec::LimitOverrides o;
  o.timeout_s = 60;
  o.output_bytes = 4096;
  o.memory_bytes = 64LL << 20;
  auto ok = resolver.Resolve("", o);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->timeout_s, 60);
  EXPECT_EQ(ok->cpu_s, 0);  // derived from the new timeout
  EXPECT_EQ(ok->output_bytes, 4096);
  EXPECT_EQ(ok->memory_bytes, 64LL << 20);

  exec::LimitOverrides slow;
  slow.timeout_s = 61;
  ExpectInvalid(StatusOf(resolver.Resolve("", slow)), "timeout_s");
  exec::LimitOverrides zero;
  zero.timeout_s = 0;
  ExpectInvalid(StatusOf(resolver.Resolve("", zero)), "timeout_s");
  exec::LimitOverrides more_memory;  // only narrowing: the container's memory is fixed
  more_memory.memory_bytes = (512LL << 20) + 1;
  ExpectInvalid(StatusOf(resolver.Resolve("", more_memory)), "memory_bytes");
  exec::LimitOverrides tiny_output;
  tiny_output.output_bytes = 1023;
  ExpectInvalid(StatusOf(resolver.Resolve("", tiny_output)), "output_bytes");
}

TEST(RequestResolverTest, FilesAreCheckedAsTheHarnessWould) {
  const auto config = TwoPools();
  RequestResolver resolver(config, runner::InputLimits{2, 10});
  EXPECT_TRUE(resolver.CheckFiles({{"a.txt", "1"}, {"d/b.txt", "2"}}).ok());
  ExpectInvalid(resolver.CheckFiles({{"a", ""}, {"b", ""}, {"c", ""}}), "files");
  ExpectInvalid(resolver.CheckFiles({{"a", "123456"}, {"b", "123456"}}), "files");
  ExpectInvalid(resolver.CheckFiles({{"/etc/passwd", ""}}), "files[0].path");
  ExpectInvalid(resolver.CheckFiles({{"ok", ""}, {"../x", ""}}), "files[1].path");
  auto twice = resolver.CheckFiles({{"a", ""}, {"./a", ""}});
  ExpectInvalid(twice, "files[1].path");
  EXPECT_NE(twice.error().message().find("given twice"), std::string::npos);
  auto nested = resolver.CheckFiles({{"d", ""}, {"d/x", ""}});
  ExpectInvalid(nested, "files[1].path");
  EXPECT_NE(nested.error().message().find("conflict"), std::string::npos);
}

TEST(RequestResolverTest, OnePathCheckForEveryField) {
  std::string normalized;
  EXPECT_TRUE(RequestResolver::CheckPath("path", "./a//b", &normalized).ok());
  EXPECT_EQ(normalized, "a/b");
  auto refused = RequestResolver::CheckPath("path", "a/../../b");
  ExpectInvalid(refused, "path");
  EXPECT_NE(refused.error().message().find("got \"a/../../b\""), std::string::npos);
}

TEST(RequestResolverTest, ARunIsCheckedForItsPoolFirstThenFilesThenLimits) {
  const auto config = TwoPools();
  RequestResolver resolver(config, {});
  exec::RunRequest request;
  request.pool = "nope";
  request.files = {{"/abs", ""}};
  EXPECT_EQ(resolver.ResolveRun(request).error().message(), "unknown pool \"nope\"");
  request.pool = "";
  request.limits.timeout_s = 1000;
  ExpectInvalid(StatusOf(resolver.ResolveRun(request)), "files[0].path");
  request.files.clear();
  ExpectInvalid(StatusOf(resolver.ResolveRun(request)), "timeout_s");
}

}  // namespace
}  // namespace sandbox::service

namespace sandbox::service {
namespace {

config::Config NetworkPools() {
  config::Config c;
  c.pools[0].name = "default";
  config::PoolConfig net = c.pools[0];
  net.name = "net";
  net.network.mode = config::NetworkPolicy::Mode::kAllowlist;
  for (const char* entry : {"pypi.org", "*.pythonhosted.org:443", "10.20.0.0/16:8080"}) {
    net.network.allow.push_back(*config::ParseNetworkRule(entry));
  }
  net.network.deny.push_back(*config::ParseNetworkRule("bad.pythonhosted.org"));
  c.pools.push_back(net);
  return c;
}

exec::NetworkRequest Keep(std::vector<std::string> allow, std::vector<std::string> deny = {}) {
  exec::NetworkRequest request;
  request.allow = std::move(allow);
  request.deny = std::move(deny);
  return request;
}

TEST(RequestResolverTest, ARequestMayNarrowItsPoolsNetworkNeverWidenIt) {
  const auto config = NetworkPools();
  RequestResolver resolver(config, {});
  // Nothing asked: the pool's own.
  auto same = resolver.ResolveNetwork("net", std::nullopt);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->has_value());
  // Off.
  exec::NetworkRequest off;
  off.off = true;
  auto none = resolver.ResolveNetwork("net", off);
  ASSERT_TRUE(none.ok() && none->has_value());
  EXPECT_EQ((*none)->mode, config::NetworkPolicy::Mode::kNone);
  // A subset, the pool's deny kept and the request's added.
  auto some = resolver.ResolveNetwork(
      "net", Keep({"files.pythonhosted.org:443", "10.20.3.0/24:8080"}, {"x.pythonhosted.org"}));
  ASSERT_TRUE(some.ok()) << some.error().message();
  ASSERT_TRUE(some->has_value());
  const auto& policy = **some;
  EXPECT_TRUE(config::DecideName(policy, "files.pythonhosted.org", 443).allowed);
  EXPECT_FALSE(config::DecideName(policy, "pypi.org", 443).allowed);
  EXPECT_EQ(policy.deny.size(), 2u);
  // Wider than the pool: refused naming the entry.
  ExpectInvalid(StatusOf(resolver.ResolveNetwork("net", Keep({"pypi.org:22"}))), "network");
  ExpectInvalid(StatusOf(resolver.ResolveNetwork("net", Keep({"10.0.0.0/8:8080"}))), "network");
  ExpectInvalid(StatusOf(resolver.ResolveNetwork("net", Keep({"*.org"}))), "network");
  ExpectInvalid(StatusOf(resolver.ResolveNetwork("net", Keep({"not a host"}))), "network.allow[0]");
  ExpectInvalid(StatusOf(resolver.ResolveNetwork("net", Keep({}))), "network.allow");
  // A pool without a network: off is what it is, anything else is refused.
  auto already = resolver.ResolveNetwork("default", off);
  ASSERT_TRUE(already.ok());
  EXPECT_FALSE(already->has_value());
  ExpectInvalid(StatusOf(resolver.ResolveNetwork("default", Keep({"pypi.org"}))), "network");
  EXPECT_FALSE(resolver.ResolveNetwork("nope", off).ok());
}

}  // namespace
}  // namespace sandbox::service
