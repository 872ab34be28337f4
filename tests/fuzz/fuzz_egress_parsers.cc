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
//   - The scrubber (scrubber.h) fed in any pieces gives what it gives the whole at once, the
//     same length, and no secret in it.
//   - The relay of a host with credentials (inject_relay.h), whatever the code and the upstream
//     send in whatever pieces: every request head the upstream gets parses strictly and carries
//     the injected header exactly once with its value and the pinned Host; the code's side
//     never holds a secret (a scrub pattern) at all.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "egress/client_hello.h"
#include "egress/control.h"
#include "egress/dns_answer.h"
#include "egress/inject_relay.h"
#include "egress/injection.h"
#include "egress/policy_table.h"
#include "egress/scrubber.h"
#include "fuzz/fuzz_check.h"
#include "sandbox/config/network_policy.h"
#include "sandbox/http1/request_head.h"
#include "sandbox/http1/text.h"

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

constexpr char kSecret[] = "Bearer sk-fuzz-0123456789abcdef";

const sandbox::egress::Injection& Rule() {
  static const sandbox::egress::Injection rule = [] {
    sandbox::egress::Injection r;
    r.host = "api.example.com";
    r.headers = {{"Authorization", kSecret}};
    r.scrub = sandbox::egress::ScrubPatterns(kSecret);
    return r;
  }();
  return rule;
}

bool HoldsSecret(std::string_view text) {
  for (const std::string& pattern : Rule().scrub) {
    if (text.find(pattern) != std::string_view::npos) return true;
  }
  return false;
}

void CheckScrubber(std::string_view bytes, std::size_t piece) {
  std::string whole(bytes);
  sandbox::egress::Scrubber at_once(Rule().scrub);
  at_once.ScrubWhole(whole);
  sandbox::egress::Scrubber streamed(Rule().scrub);
  std::string out;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    streamed.Feed(bytes.substr(at, piece), out);
  }
  streamed.Finish(out);
  FUZZ_CHECK(out.size() == bytes.size(), "scrubbing keeps the length");
  FUZZ_CHECK(!HoldsSecret(out), "no secret is left");
  FUZZ_CHECK(out == whole, "pieces or whole, the same");
}

// The requests the upstream got, head by head (a cut-off tail allowed).
void CheckUpstreamRequests(std::string_view stream) {
  const sandbox::http::HeadLimits limits;
  while (!stream.empty()) {
    const auto end = stream.find("\r\n\r\n");
    if (end == std::string_view::npos) return;  // the connection ended inside it
    auto parsed = sandbox::http::ParseRequestHead(stream.substr(0, end + 4), limits);
    auto* head = std::get_if<sandbox::http::RequestHead>(&parsed);
    FUZZ_CHECK(head != nullptr, "every forwarded head parses strictly");
    int injected = 0;
    for (const auto& [name, value] : head->headers) {
      if (sandbox::http::Lower(name) == "authorization") {
        FUZZ_CHECK(value == kSecret, "the only Authorization is the rule's");
        ++injected;
      }
    }
    FUZZ_CHECK(injected == 1, "the credential is there exactly once");
    FUZZ_CHECK(head->Header("host") == std::optional<std::string_view>("api.example.com"),
               "Host is pinned");
    stream.remove_prefix(end + 4);
    const auto body = static_cast<std::size_t>(head->content_length);
    if (stream.size() < body) return;
    stream.remove_prefix(body);
  }
}

// Input: a byte for where the code's part ends, a byte for the piece size, then the code's bytes
// and the upstream's, fed alternately in pieces.
void CheckInjectRelay(std::string_view bytes) {
  if (bytes.size() < 2) return;
  const std::size_t split = 2 + (bytes.size() - 2) * static_cast<unsigned char>(bytes[0]) / 256;
  const std::size_t piece = 1 + static_cast<unsigned char>(bytes[1]) % 64;
  std::string_view client = bytes.substr(2, split - 2);
  std::string_view upstream = bytes.substr(split);
  CheckScrubber(upstream, piece);
  sandbox::http::HeadLimits limits;
  limits.max_head_bytes = 4096;
  sandbox::egress::InjectRelay relay(Rule(), limits, 4096);
  std::string to_upstream;
  std::string to_client;
  const auto drain = [&] {
    to_upstream += relay.to_upstream();
    relay.to_upstream().clear();
    to_client += relay.to_client();
    relay.to_client().clear();
  };
  // A side is fed while the relay takes more (as the proxy reads a socket); when neither is,
  // what is left is never delivered.
  for (bool fed = true; fed;) {
    fed = false;
    if (!client.empty() && relay.wants_client_input()) {
      relay.FromClient(client.substr(0, piece));
      client.remove_prefix(std::min(piece, client.size()));
      fed = true;
    }
    drain();
    if (!upstream.empty() && relay.wants_upstream_input()) {
      relay.FromUpstream(upstream.substr(0, piece));
      upstream.remove_prefix(std::min(piece, upstream.size()));
      fed = true;
    }
    drain();
  }
  relay.ClientEof();
  relay.UpstreamEof();
  drain();
  FUZZ_CHECK(!HoldsSecret(to_client), "the code never sees a secret");
  FUZZ_CHECK(!HoldsSecret(relay.problem()), "nor does the audit line hold one");
  CheckUpstreamRequests(to_upstream);
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
  CheckInjectRelay(bytes);
  return 0;
}
