// What a sandbox can put before the egress proxy's decisions: the first bytes of a tunnel (the
// TLS ClientHello scan, client_hello.h) and a destination name (network_policy.h). Properties:
//   - ScanClientHello never reads past its input and is monotone: once a prefix is decided
//     (not kNeedMore), every longer input with that prefix gets the same decision.
//   - A found server name is non-empty and within the hello's bound.
//   - DecideName of any text never allows what the policy does not name: an allowed name
//     normalizes to one that matches an allow entry and none of the deny entries' names.
//   - ParseNetworkRule either refuses with a message or yields a rule that parses again from
//     its own text to the same rule.
//   - A control line (control.h) is refused with a message or yields an op whose entries parse
//     again from their text; applying it answers with an event either way.
//   - The null DNS answer (dns_answer.h) exists only for a query, echoes its id and question,
//     is never longer than the query, and is a response with NXDOMAIN.
//   - A proxy request head (TargetForms::kProxy) that parses has a target with a port, and a
//     path starting with '/' unless it is a CONNECT.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "egress/client_hello.h"
#include "egress/control.h"
#include "egress/dns_answer.h"
#include "egress/policy_table.h"
#include "fuzz/fuzz_check.h"
#include "sandbox/config/network_policy.h"
#include "sandbox/http1/request_head.h"

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

void CheckControl(std::string_view line) {
  auto op = sandbox::egress::ParseControlLine(line);
  if (!op.ok()) {
    FUZZ_CHECK(!op.error().message().empty(), "a refused control line says why");
  } else if (auto* set = std::get_if<sandbox::egress::ControlSet>(&*op)) {
    FUZZ_CHECK(!set->entry.pool.empty(), "a set names its pool");
    for (const auto* rules : {&set->entry.policy.allow, &set->entry.policy.deny}) {
      for (const auto& rule : *rules) {
        auto again = sandbox::config::ParseNetworkRule(rule.text);
        FUZZ_CHECK(again.ok() && *again == rule, "an entry parses again to itself");
      }
    }
  }
  // A probe connects somewhere for up to 2 s: parsed here, never run.
  if (op.ok() && std::holds_alternative<sandbox::egress::ControlProbe>(*op)) return;
  sandbox::egress::PolicyTable table;
  sandbox::egress::TlsSettings tls;
  const auto answer = sandbox::egress::ApplyControlLine(table, tls, line);
  FUZZ_CHECK(answer.contains("ev"), "every line is answered");
  FUZZ_CHECK((answer["ev"] == "applied") == op.ok(), "applied exactly when it parses");
}

void CheckDns(std::string_view query) {
  auto answer = sandbox::egress::NullDnsAnswer(query);
  if (!answer) return;
  const std::string& r = answer->response;
  FUZZ_CHECK(r.size() >= 17 && r.size() <= query.size(), "header, question, no more");
  FUZZ_CHECK(r.substr(0, 2) == query.substr(0, 2), "the id is echoed");
  FUZZ_CHECK(r.substr(12) == query.substr(12, r.size() - 12), "the question is echoed");
  FUZZ_CHECK((static_cast<unsigned char>(r[2]) & 0x80) != 0, "a response");
  FUZZ_CHECK((static_cast<unsigned char>(r[3]) & 0x0F) == 3, "NXDOMAIN");
  FUZZ_CHECK(!answer->name.empty(), "the name is named");
}

void CheckProxyHead(std::string_view head) {
  auto parsed = sandbox::http::ParseRequestHead(head, sandbox::http::HeadLimits{},
                                                sandbox::http::TargetForms::kProxy);
  auto* request = std::get_if<sandbox::http::RequestHead>(&parsed);
  if (request == nullptr) return;
  FUZZ_CHECK(request->proxy.has_value(), "a proxy request has its target");
  FUZZ_CHECK(request->proxy->port != 0 && !request->proxy->host.empty(), "host and port");
  if (request->method != "CONNECT") {
    FUZZ_CHECK(request->proxy->path.starts_with('/'), "an origin-form path for upstream");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckHello(bytes);
  const std::uint16_t port = size >= 2 ? static_cast<std::uint16_t>(data[0] << 8 | data[1]) : 443;
  CheckName(bytes.substr(size >= 2 ? 2 : 0, 300), port);
  CheckRule(bytes.substr(0, 300));
  CheckControl(bytes);
  CheckDns(bytes);
  CheckProxyHead(bytes);
  return 0;
}
