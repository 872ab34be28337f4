// What a sandbox can put before the egress proxy's decisions: the first bytes of a tunnel (the
// TLS ClientHello scan, client_hello.h) and a destination name (network_policy.h). Properties:
//   - ScanClientHello never reads past its input and is monotone: once a prefix is decided
//     (not kNeedMore), every longer input with that prefix gets the same decision.
//   - A found server name is non-empty and within the hello's bound.
//   - DecideName of any text never allows what the policy does not name: an allowed name
//     normalizes to one that matches an allow entry and none of the deny entries' names.
//   - ParseNetworkRule either refuses with a message or yields a rule that parses again from
//     its own text to the same rule.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/client_hello.h"
#include "fuzz/fuzz_check.h"
#include "sandbox/config/network_policy.h"

namespace {

using sandbox::config::NetworkPolicy;
using sandbox::egress::ClientHelloScan;

const NetworkPolicy& Policy() {
  static const NetworkPolicy policy = [] {
    NetworkPolicy p;
    p.mode = NetworkPolicy::Mode::kAllowlist;
    for (const char* a : {"pypi.org", "*.pythonhosted.org:443", "203.0.113.0/24"}) {
      p.allow.push_back(*sandbox::config::ParseNetworkRule(a));
    }
    p.deny.push_back(*sandbox::config::ParseNetworkRule("*.evil.pythonhosted.org"));
    return p;
  }();
  return policy;
}

void CheckHello(std::string_view bytes) {
  const ClientHelloScan whole = sandbox::egress::ScanClientHello(bytes);
  if (whole.state == ClientHelloScan::State::kServerName) {
    FUZZ_CHECK(!whole.server_name.empty(), "a found name is not empty");
    FUZZ_CHECK(whole.server_name.size() <= bytes.size(), "the name came from the input");
  }
  // Monotone: the decision of a prefix stands.
  for (std::size_t n = 0; n < bytes.size(); n += 1 + n / 4) {
    const ClientHelloScan part = sandbox::egress::ScanClientHello(bytes.substr(0, n));
    if (part.state == ClientHelloScan::State::kNeedMore) continue;
    FUZZ_CHECK(part.state == whole.state, "a decided prefix keeps its decision");
    FUZZ_CHECK(part.server_name == whole.server_name, "and its name");
    break;
  }
}

void CheckName(std::string_view text, std::uint16_t port) {
  const auto decision = sandbox::config::DecideName(Policy(), text, port);
  FUZZ_CHECK(!decision.reason.empty(), "every decision says why");
  if (!decision.allowed) return;
  if (sandbox::config::ParseIpAddress(text).ok()) return;  // decided as an address entry
  auto name = sandbox::config::NormalizeHostName(text);
  FUZZ_CHECK(name.ok(), "an allowed name is a host name");
  FUZZ_CHECK(*name == "pypi.org" || name->ends_with(".pythonhosted.org"), "allowed by an entry");
  FUZZ_CHECK(!name->ends_with(".evil.pythonhosted.org"), "never a denied name");
}

void CheckRule(std::string_view text) {
  auto rule = sandbox::config::ParseNetworkRule(text);
  if (!rule.ok()) {
    FUZZ_CHECK(!rule.error().message().empty(), "a refusal says why");
    return;
  }
  auto again = sandbox::config::ParseNetworkRule(rule->text);
  FUZZ_CHECK(again.ok() && *again == *rule, "a rule parses again to itself");
  FUZZ_CHECK(!rule->ports.empty(), "a rule has ports");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckHello(bytes);
  const std::uint16_t port = size >= 2 ? static_cast<std::uint16_t>(data[0] << 8 | data[1]) : 443;
  CheckName(bytes.substr(size >= 2 ? 2 : 0, 300), port);
  CheckRule(bytes.substr(0, 300));
  return 0;
}
