// The network policy (pools[].network): its entries' grammar, what it allows, narrowing, and
// how the configuration reads it.
#include "sandbox/config/network_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandbox/config/config.h"

namespace sandbox::config {
namespace {

using ::testing::HasSubstr;

NetworkRule Rule(const std::string& text) {
  auto rule = ParseNetworkRule(text);
  EXPECT_TRUE(rule.ok()) << text << ": " << (rule.ok() ? "" : rule.error().message());
  return rule.ok() ? *rule : NetworkRule{};
}

std::string ErrorOf(const std::string& text) {
  auto rule = ParseNetworkRule(text);
  return rule.ok() ? "" : rule.error().message();
}

NetworkPolicy Allowlist(const std::vector<std::string>& allow,
                        const std::vector<std::string>& deny = {}) {
  NetworkPolicy policy;
  policy.mode = NetworkPolicy::Mode::kAllowlist;
  for (const auto& a : allow) policy.allow.push_back(Rule(a));
  for (const auto& d : deny) policy.deny.push_back(Rule(d));
  return policy;
}

IpAddress Ip(const std::string& text) {
  auto address = ParseIpAddress(text);
  EXPECT_TRUE(address.ok()) << text;
  return address.ok() ? *address : IpAddress{};
}

TEST(NetworkRuleTest, NamesSuffixesAddressesAndPorts) {
  const auto name = Rule("PyPI.org.");
  EXPECT_EQ(name.kind, NetworkRule::Kind::kHost);
  EXPECT_EQ(name.host, "pypi.org");
  EXPECT_EQ(name.ports, (std::vector<PortRange>{{80, 80}, {443, 443}}));

  const auto suffix = Rule("*.pythonhosted.org:443");
  EXPECT_EQ(suffix.kind, NetworkRule::Kind::kSuffix);
  EXPECT_EQ(suffix.host, "pythonhosted.org");
  EXPECT_EQ(suffix.ports, (std::vector<PortRange>{{443, 443}}));

  const auto cidr = Rule("10.20.0.0/16:80,8000-8100");
  EXPECT_EQ(cidr.kind, NetworkRule::Kind::kCidr);
  EXPECT_EQ(cidr.prefix, 16);
  EXPECT_EQ(cidr.network.ToString(), "10.20.0.0");
  EXPECT_EQ(cidr.ports, (std::vector<PortRange>{{80, 80}, {8000, 8100}}));

  EXPECT_EQ(Rule("203.0.113.7").prefix, 32);
  EXPECT_EQ(Rule("2001:db8::/32").prefix, 32);
  EXPECT_TRUE(Rule("2001:db8::/32").network.v6);
  EXPECT_EQ(Rule("[2001:db8::1]:443").prefix, 128);
  EXPECT_EQ(Rule("[2001:db8::]/32:443,8443").ports,
            (std::vector<PortRange>{{443, 443}, {8443, 8443}}));
  EXPECT_EQ(Rule("pypi.org:*").ports, (std::vector<PortRange>{{1, 65535}}));
}

TEST(NetworkRuleTest, RefusalsSayWhatIsWrong) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("empty"));
  EXPECT_THAT(ErrorOf("*"), HasSubstr("'*' only as the first label"));
  EXPECT_THAT(ErrorOf("a.*.example.com"), HasSubstr("'*' only as the first label"));
  EXPECT_THAT(ErrorOf("10.0.0.1/8"), HasSubstr("host bits set: write 10.0.0.0/8"));
  EXPECT_THAT(ErrorOf("1.2.3.4/33"), HasSubstr("prefix length must be 0 to 32"));
  EXPECT_THAT(ErrorOf("169.254.169.254"), HasSubstr("link-local"));
  EXPECT_THAT(ErrorOf("127.0.0.1:8080"), HasSubstr("loopback"));
  EXPECT_THAT(ErrorOf("[::1]:443"), HasSubstr("loopback"));
  EXPECT_THAT(ErrorOf("::ffff:127.0.0.1"), HasSubstr("loopback"));  // mapped: one spelling
  EXPECT_THAT(ErrorOf("pypi.org:0"), HasSubstr("from 1 to 65535"));
  EXPECT_THAT(ErrorOf("pypi.org:70000"), HasSubstr("from 1 to 65535"));
  EXPECT_THAT(ErrorOf("pypi.org:443-80"), HasSubstr("ends before it starts"));
  EXPECT_THAT(ErrorOf("pypi.org:"), HasSubstr("from 1 to 65535"));
  EXPECT_THAT(ErrorOf("ex ample.com"), HasSubstr("whitespace"));
  EXPECT_THAT(ErrorOf("evil.com\r\nX: y"), HasSubstr("control characters"));
  EXPECT_THAT(ErrorOf("b\xC3\xBC"
                      "cher.de"),
              HasSubstr("xn--"));
  EXPECT_THAT(ErrorOf("10.0.0"), HasSubstr("neither an IP address nor a host name"));
  EXPECT_THAT(ErrorOf("-a.example.com"), HasSubstr("starting with '-'"));
  EXPECT_THAT(ErrorOf("a..example.com"), HasSubstr("empty label"));
  EXPECT_THAT(ErrorOf("[2001:db8::1"), HasSubstr("no ']'"));
  EXPECT_THAT(ErrorOf("[2001:db8::1]443"), HasSubstr("expected ':PORTS'"));
  EXPECT_THAT(ErrorOf(std::string(64, 'a') + ".com"), HasSubstr("longer than 63"));
}

TEST(NetworkDecisionTest, NamesByEntryAndPortDenyFirst) {
  const auto policy =
      Allowlist({"pypi.org", "*.pythonhosted.org:443"}, {"*.evil.pythonhosted.org"});
  EXPECT_TRUE(DecideName(policy, "pypi.org", 443).allowed);
  EXPECT_TRUE(DecideName(policy, "PYPI.ORG.", 80).allowed);
  EXPECT_FALSE(DecideName(policy, "pypi.org", 22).allowed);
  EXPECT_THAT(DecideName(policy, "pypi.org", 22).reason, HasSubstr("pypi.org:22 is not in"));
  EXPECT_TRUE(DecideName(policy, "files.pythonhosted.org", 443).allowed);
  EXPECT_FALSE(DecideName(policy, "files.pythonhosted.org", 80).allowed);
  EXPECT_FALSE(DecideName(policy, "pythonhosted.org", 443).allowed);  // a suffix is below
  EXPECT_FALSE(DecideName(policy, "notpythonhosted.org", 443).allowed);
  const auto denied = DecideName(policy, "a.evil.pythonhosted.org", 443);
  EXPECT_FALSE(denied.allowed);
  EXPECT_THAT(denied.reason, HasSubstr("denied by \"*.evil.pythonhosted.org\""));
  EXPECT_FALSE(DecideName(policy, "pypi.org\r\nHost: evil.com", 443).allowed);
  EXPECT_FALSE(DecideName(NetworkPolicy{}, "pypi.org", 443).allowed);
  EXPECT_THAT(DecideName(NetworkPolicy{}, "pypi.org", 443).reason, HasSubstr("no network"));
}

TEST(NetworkDecisionTest, AddressesNeedAnAddressEntryAndSomeAreNeverReachable) {
  const auto policy = Allowlist({"pypi.org", "203.0.113.0/24:443", "0.0.0.0/0:9"});
  EXPECT_TRUE(DecideAddress(policy, Ip("203.0.113.7"), 443, false).allowed);
  EXPECT_FALSE(DecideAddress(policy, Ip("198.51.100.7"), 443, false).allowed);
  EXPECT_THAT(DecideAddress(policy, Ip("198.51.100.7"), 443, false).reason,
              HasSubstr("needs an address or CIDR entry"));
  // A raw address in a name's place is decided as an address.
  EXPECT_TRUE(DecideName(policy, "203.0.113.9", 443).allowed);
  EXPECT_FALSE(DecideName(policy, "203.0.113.9", 80).allowed);
  // What an allowed name resolves to: public yes, private only with an entry, never-reachable no.
  EXPECT_TRUE(DecideAddress(policy, Ip("151.101.0.223"), 443, true).allowed);
  EXPECT_FALSE(DecideAddress(policy, Ip("10.1.2.3"), 443, true).allowed);
  EXPECT_THAT(DecideAddress(policy, Ip("172.17.0.1"), 443, true).reason, HasSubstr("private"));
  EXPECT_FALSE(DecideAddress(policy, Ip("fd00:ec2::254"), 443, true).allowed);
  const auto with_private = Allowlist({"pypi.org", "10.0.0.0/8"});
  EXPECT_TRUE(DecideAddress(with_private, Ip("10.1.2.3"), 443, true).allowed);
  // 0.0.0.0/0 allows every address on port 9, but never the metadata service or loopback.
  EXPECT_TRUE(DecideAddress(policy, Ip("10.9.9.9"), 9, false).allowed);
  for (const char* never : {"169.254.169.254", "127.0.0.1", "::1", "fe80::1", "224.0.0.1",
                            "0.0.0.0", "::ffff:169.254.169.254"}) {
    const auto decision = DecideName(policy, never, 9);
    EXPECT_FALSE(decision.allowed) << never;
    EXPECT_THAT(decision.reason, HasSubstr("never reachable")) << never;
  }
  EXPECT_EQ(NeverReachable(Ip("203.0.113.7")), "");
}

TEST(NetworkNarrowingTest, ARequestMayNarrowNeverWiden) {
  const auto pool = Allowlist({"*.pythonhosted.org:443", "pypi.org", "10.0.0.0/8:80-90"},
                              {"bad.pythonhosted.org"});
  EXPECT_TRUE(CheckNarrows(pool, Allowlist({"files.pythonhosted.org:443"})).ok());
  EXPECT_TRUE(CheckNarrows(pool, Allowlist({"*.a.pythonhosted.org:443", "pypi.org:443"})).ok());
  EXPECT_TRUE(CheckNarrows(pool, Allowlist({"10.1.0.0/16:80,85-90"})).ok());
  EXPECT_TRUE(CheckNarrows(pool, NetworkPolicy{}).ok());  // off is always narrower
  EXPECT_TRUE(CheckNarrows(pool, Allowlist({"pypi.org"}, {"*.anything.example"})).ok());
  for (const char* wider :
       {"pypi.org:22", "*.org", "pythonhosted.org:443", "files.pythonhosted.org", "11.0.0.0/16:80",
        "10.0.0.0/7:80", "10.1.0.0/16:79-80"}) {
    const auto status = CheckNarrows(pool, Allowlist({wider}));
    EXPECT_FALSE(status.ok()) << wider;
    if (!status.ok()) {
      EXPECT_THAT(status.error().message(), HasSubstr(wider));
    }
  }
  EXPECT_FALSE(CheckNarrows(NetworkPolicy{}, Allowlist({"pypi.org"})).ok());

  const auto narrowed =
      Narrowed(pool, Allowlist({"*.pythonhosted.org:443"}, {"x.pythonhosted.org"}));
  EXPECT_TRUE(DecideName(narrowed, "files.pythonhosted.org", 443).allowed);
  EXPECT_FALSE(DecideName(narrowed, "pypi.org", 443).allowed);              // not asked for
  EXPECT_FALSE(DecideName(narrowed, "bad.pythonhosted.org", 443).allowed);  // the pool's deny
  EXPECT_FALSE(DecideName(narrowed, "x.pythonhosted.org", 443).allowed);    // the request's
  EXPECT_EQ(Narrowed(pool, NetworkPolicy{}).mode, NetworkPolicy::Mode::kNone);
  EXPECT_EQ(DescribeNetworkPolicy(NetworkPolicy{}), "none");
  EXPECT_EQ(DescribeNetworkPolicy(Allowlist({"pypi.org"}, {"x.org"})),
            "allowlist: pypi.org; denied: x.org");
}

std::string ConfigError(const char* pool_json) {
  auto doc = nlohmann::json::parse(std::string(R"({"pools": [)") + pool_json + "]}");
  auto config = ApplyJson(Config{}, doc);
  if (!config.ok()) return config.error().message();
  auto status = Validate(*config);
  return status.ok() ? "" : status.error().message();
}

TEST(NetworkConfigTest, PoolsReadTheirPolicyAndRefusalsNameTheEntry) {
  auto doc = nlohmann::json::parse(R"({"pools": [{"name": "default"},
      {"name": "data", "network": {"mode": "allowlist", "allow": ["pypi.org", "*.pythonhosted.org:443"],
                                   "deny": ["10.0.0.0/8"]}}]})");
  auto config = ApplyJson(Config{}, doc);
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->pools[0].network.mode, NetworkPolicy::Mode::kNone);
  const auto& network = config->pools[1].network;
  EXPECT_EQ(network.mode, NetworkPolicy::Mode::kAllowlist);
  ASSERT_EQ(network.allow.size(), 2u);
  EXPECT_EQ(network.allow[1].host, "pythonhosted.org");
  ASSERT_EQ(network.deny.size(), 1u);

  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org", "*"]}})"),
              HasSubstr("pools[0].network.allow[1]: entry \"*\""));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org"],
                                          "deny": ["169.254.169.254"]}})"),
              HasSubstr("pools[0].network.deny[0]"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "open"}})"),
              HasSubstr("pools[0].network.mode: expected \"none\" or \"allowlist\""));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist"}})"),
              HasSubstr("pools[0].network.allow: an allowlist needs at least one entry"));
  EXPECT_THAT(ConfigError(R"({"network": {"allow": ["pypi.org"]}})"),
              HasSubstr("entries need \"mode\": \"allowlist\""));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "none", "alow": []}})"),
              HasSubstr("pools[0].network.alow: unknown key"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": [443]}})"),
              HasSubstr("pools[0].network.allow"));
  EXPECT_EQ(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org"]}})"), "");
  EXPECT_EQ(ConfigError(R"({"network": {"mode": "none"}})"), "");
}

TEST(NetworkConfigTest, TheIndexAndTheCredentialsMustBeAllowed) {
  // Valid, but credentials need the deployment CA.
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org",
      "files.pythonhosted.org"], "pip_index_url": "https://pypi.org/simple/",
      "inject": [{"host": "pypi.org", "header": "Authorization", "value_env": "TOKEN"}]}})"),
              HasSubstr("pools[0].network.inject: credentials need the deployment CA"));
  auto with_ca = ApplyJson(Config{}, nlohmann::json::parse(R"({
      "egress": {"ca_cert_file": "/ca.pem", "ca_key_file": "/ca.key"},
      "pools": [{"name": "default", "network": {"mode": "allowlist", "allow": ["pypi.org"],
        "inject": [{"host": "pypi.org", "header": "Authorization", "value_env": "T"}]}}]})"));
  ASSERT_TRUE(with_ca.ok()) << with_ca.error().message();
  EXPECT_TRUE(Validate(*with_ca).ok());
  auto half = ApplyJson(Config{}, nlohmann::json::parse(R"({"egress": {"ca_key_file": "/k"}})"));
  ASSERT_TRUE(half.ok());
  EXPECT_THAT(Validate(*half).error().message(), HasSubstr("egress.ca_cert_file: set both"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org"],
                                          "pip_index_url": "https://evil.example/simple/"}})"),
              HasSubstr("pools[0].network.pip_index_url: its host is not allowed"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org"],
                                          "pip_index_url": "ftp://pypi.org/"}})"),
              HasSubstr("expected an http:// or https:// URL"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org:80"],
      "inject": [{"host": "pypi.org", "header": "Authorization", "value_env": "T"}]}})"),
              HasSubstr("pools[0].network.inject[0].host: the allowlist does not allow"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org"],
      "inject": [{"host": "pypi.org", "header": "Bad Header", "value_env": "T"}]}})"),
              HasSubstr("pools[0].network.inject[0].header: not a header name"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "allowlist", "allow": ["pypi.org"],
      "inject": [{"host": "pypi.org", "header": "X-Key"}]}})"),
              HasSubstr("inject[0].value_env: names no variable"));
  EXPECT_THAT(ConfigError(R"({"network": {"mode": "none",
                                          "pip_index_url": "https://pypi.org/simple/"}})"),
              HasSubstr("entries need \"mode\": \"allowlist\""));
}

TEST(NetworkConfigTest, EgressSubnetsAreAnIpv4BlockOfAtLeastOneSlash24) {
  auto with = [](const std::string& subnets) {
    auto doc = nlohmann::json::parse(R"({"egress": {"subnets": ")" + subnets + R"("}})");
    auto config = ApplyJson(Config{}, doc);
    if (!config.ok()) return config.error().message();
    auto status = Validate(*config);
    return status.ok() ? std::string() : status.error().message();
  };
  EXPECT_EQ(with("10.213.0.0/16"), "");
  EXPECT_EQ(with("172.30.4.0/24"), "");
  EXPECT_THAT(with("10.213.0.0/25"), HasSubstr("egress.subnets: must hold at least one /24"));
  EXPECT_THAT(with("fd00::/64"), HasSubstr("egress.subnets: expected an IPv4 CIDR"));
  EXPECT_THAT(with("pypi.org"), HasSubstr("egress.subnets"));
}

}  // namespace
}  // namespace sandbox::config
