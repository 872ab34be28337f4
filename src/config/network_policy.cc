#include "sandbox/config/network_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include "sandbox/core/error.h"

namespace sandbox::config {
namespace {

Error Bad(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// A range of addresses with what it is, for the never-reachable and private lists.
struct Range {
  const char* cidr;
  const char* what;
};

// Reachable by no policy: the host itself, the link (the cloud metadata service at
// 169.254.169.254 and fd00:ec2::254 aside, which the private list covers), multicast.
constexpr Range kNever[] = {
    {"0.0.0.0/8", "unspecified"},
    {"127.0.0.0/8", "loopback"},
    {"169.254.0.0/16", "link-local (the cloud metadata service is there)"},
    {"224.0.0.0/4", "multicast"},
    {"240.0.0.0/4", "reserved"},
    {"::/128", "unspecified"},
    {"::1/128", "loopback"},
    {"fe80::/10", "link-local"},
    {"ff00::/8", "multicast"},
};

// Reachable only through an address or CIDR entry that covers them: the networks the host, the
// Docker bridges and the rest of a private network live on.
constexpr Range kPrivate[] = {
    {"10.0.0.0/8", "private"},         {"172.16.0.0/12", "private"},
    {"192.168.0.0/16", "private"},     {"100.64.0.0/10", "shared (carrier-grade NAT)"},
    {"198.18.0.0/15", "benchmarking"}, {"fc00::/7", "unique-local"},
    {"fec0::/10", "site-local"},
};

bool PrefixMatches(const IpAddress& network, int prefix, const IpAddress& address) {
  if (network.v6 != address.v6) return false;
  const int full = prefix / 8;
  if (std::memcmp(network.bytes.data(), address.bytes.data(), static_cast<std::size_t>(full)) !=
      0) {
    return false;
  }
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xFF << (8 - rest));
  return (network.bytes[static_cast<std::size_t>(full)] & mask) ==
         (address.bytes[static_cast<std::size_t>(full)] & mask);
}

struct ParsedRange {
  IpAddress network;
  int prefix;
  const char* what;
};

std::vector<ParsedRange> ParseRanges(const Range* begin, const Range* end) {
  std::vector<ParsedRange> out;
  for (const Range* r = begin; r != end; ++r) {
    std::string_view cidr = r->cidr;
    const auto slash = cidr.find('/');
    auto address = ParseIpAddress(cidr.substr(0, slash));
    int prefix = 0;
    std::from_chars(cidr.data() + slash + 1, cidr.data() + cidr.size(), prefix);
    if (address.ok()) out.push_back({*address, prefix, r->what});
  }
  return out;
}

const std::vector<ParsedRange>& NeverRanges() {
  static const std::vector<ParsedRange> ranges = ParseRanges(std::begin(kNever), std::end(kNever));
  return ranges;
}

const std::vector<ParsedRange>& PrivateRanges() {
  static const std::vector<ParsedRange> ranges =
      ParseRanges(std::begin(kPrivate), std::end(kPrivate));
  return ranges;
}

const char* PrivateKind(const IpAddress& address) {
  for (const auto& range : PrivateRanges()) {
    if (PrefixMatches(range.network, range.prefix, address)) return range.what;
  }
  return nullptr;
}

Result<std::uint16_t> ParsePort(std::string_view text) {
  unsigned value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 1 || value > 65535) {
    return Bad("port " + Quoted(text) + " is not a number from 1 to 65535");
  }
  return static_cast<std::uint16_t>(value);
}

Result<std::vector<PortRange>> ParsePorts(std::string_view text) {
  std::vector<PortRange> ports;
  if (text == "*") return std::vector<PortRange>{{1, 65535}};
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const auto dash = item.find('-');
    auto first = ParsePort(item.substr(0, dash));
    if (!first.ok()) return first.error();
    std::uint16_t last = *first;
    if (dash != std::string_view::npos) {
      auto parsed = ParsePort(item.substr(dash + 1));
      if (!parsed.ok()) return parsed.error();
      last = *parsed;
      if (last < *first) return Bad("port range " + Quoted(item) + " ends before it starts");
    }
    ports.push_back({*first, last});
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return ports;
}

bool PortIn(const std::vector<PortRange>& ports, std::uint16_t port) {
  return std::any_of(ports.begin(), ports.end(),
                     [port](const PortRange& r) { return r.first <= port && port <= r.last; });
}

// Every port of `inner` is among `outer`'s.
bool PortsWithin(const std::vector<PortRange>& inner, const std::vector<PortRange>& outer) {
  std::vector<PortRange> merged = outer;
  std::sort(merged.begin(), merged.end(),
            [](const PortRange& a, const PortRange& b) { return a.first < b.first; });
  for (const PortRange& r : inner) {
    unsigned next = r.first;  // the lowest port of r not yet found covered
    for (const PortRange& m : merged) {
      if (m.first <= next && next <= m.last) next = static_cast<unsigned>(m.last) + 1;
    }
    if (next <= r.last) return false;
  }
  return true;
}

bool NameMatches(const NetworkRule& rule, std::string_view host) {
  if (rule.kind == NetworkRule::Kind::kHost) return host == rule.host;
  if (rule.kind != NetworkRule::Kind::kSuffix) return false;
  return host.size() > rule.host.size() + 1 && host.ends_with(rule.host) &&
         host[host.size() - rule.host.size() - 1] == '.';
}

bool Covers(const NetworkRule& outer, const NetworkRule& inner) {
  if (!PortsWithin(inner.ports, outer.ports)) return false;
  switch (outer.kind) {
    case NetworkRule::Kind::kHost:
      return inner.kind == NetworkRule::Kind::kHost && inner.host == outer.host;
    case NetworkRule::Kind::kSuffix:
      if (inner.kind == NetworkRule::Kind::kHost) return NameMatches(outer, inner.host);
      return inner.kind == NetworkRule::Kind::kSuffix &&
             (inner.host == outer.host || NameMatches(outer, inner.host));
    case NetworkRule::Kind::kCidr:
      return inner.kind == NetworkRule::Kind::kCidr && inner.prefix >= outer.prefix &&
             PrefixMatches(outer.network, outer.prefix, inner.network);
  }
  return false;
}

std::string Target(std::string_view host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

}  // namespace

std::string IpAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof(text));
  return text;
}

Result<IpAddress> ParseIpAddress(std::string_view text) {
  const std::string copy(text);
  IpAddress address;
  if (::inet_pton(AF_INET, copy.c_str(), address.bytes.data()) == 1) return address;
  if (::inet_pton(AF_INET6, copy.c_str(), address.bytes.data()) != 1) {
    return Bad(Quoted(text) + " is not an IP address");
  }
  address.v6 = true;
  constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (std::memcmp(address.bytes.data(), kMapped, sizeof(kMapped)) == 0) {
    IpAddress v4;
    std::memcpy(v4.bytes.data(), address.bytes.data() + 12, 4);
    return v4;
  }
  return address;
}

Result<std::string> NormalizeHostName(std::string_view name) {
  if (name.ends_with('.')) name.remove_suffix(1);
  if (name.empty()) return Bad("an empty host name");
  if (name.size() > 253) return Bad("a host name longer than 253 characters");
  std::string out;
  out.reserve(name.size());
  std::size_t label = 0;
  bool digits_only = true;  // of the last label: "10.0.0" is neither an address nor a name
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      if (label == 0) return Bad(Quoted(name) + " has an empty label");
      if (label > 63) return Bad(Quoted(name) + " has a label longer than 63 characters");
      if (out.back() == '-') return Bad(Quoted(name) + " has a label ending in '-'");
      if (i < name.size()) {
        out.push_back('.');
        label = 0;
        digits_only = true;
      }
      continue;
    }
    const auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x80) {
      return Bad(Quoted(name) + " is not ASCII: write an international name in its xn-- form");
    }
    const char lower = static_cast<char>(std::tolower(c));
    const bool ok = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ||
                    lower == '-' || lower == '_';
    if (!ok) return Bad(Quoted(name) + " has a character a host name cannot have");
    if (label == 0 && lower == '-') return Bad(Quoted(name) + " has a label starting with '-'");
    digits_only = digits_only && lower >= '0' && lower <= '9';
    out.push_back(lower);
    ++label;
  }
  if (digits_only) return Bad(Quoted(name) + " is neither an IP address nor a host name");
  return out;
}

Result<NetworkRule> ParseNetworkRule(std::string_view text) {
  NetworkRule rule;
  rule.text = std::string(text);
  if (text.empty()) return Bad("an empty entry");
  if (std::any_of(text.begin(), text.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' '; })) {
    return Bad("entry " + Quoted(text) + " has whitespace or control characters");
  }
  std::string_view target = text;
  std::string joined;  // a bracketed IPv6 entry without its brackets
  std::string_view ports;
  bool has_ports = false;
  if (text.front() == '[') {  // [v6], [v6]/N, each optionally with :ports
    const auto close = text.find(']');
    if (close == std::string_view::npos) return Bad("entry " + Quoted(text) + " has no ']'");
    std::string_view after = text.substr(close + 1);
    std::string_view prefix;
    if (after.starts_with('/')) {
      const auto colon = after.find(':');
      prefix = after.substr(0, colon);
      after = colon == std::string_view::npos ? std::string_view{} : after.substr(colon);
    }
    if (!after.empty() && !after.starts_with(':')) {
      return Bad("entry " + Quoted(text) + ": expected ':PORTS' after ']'");
    }
    has_ports = !after.empty();
    if (has_ports) ports = after.substr(1);
    joined = std::string(text.substr(1, close - 1)) + std::string(prefix);
    target = joined;
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const auto colon = text.find(':');
    target = text.substr(0, colon);
    ports = text.substr(colon + 1);
    has_ports = true;
  }
  if (has_ports) {
    auto parsed = ParsePorts(ports);
    if (!parsed.ok()) return Bad("entry " + Quoted(text) + ": " + parsed.error().message());
    rule.ports = std::move(*parsed);
  } else {
    rule.ports = {{80, 80}, {443, 443}};
  }

  const auto slash = target.find('/');
  auto address = ParseIpAddress(target.substr(0, slash));
  if (address.ok() || slash != std::string_view::npos) {
    if (!address.ok()) return Bad("entry " + Quoted(text) + ": " + address.error().message());
    rule.kind = NetworkRule::Kind::kCidr;
    rule.network = *address;
    const int bits = address->v6 ? 128 : 32;
    rule.prefix = bits;
    if (slash != std::string_view::npos) {
      const std::string_view digits = target.substr(slash + 1);
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rule.prefix);
      if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() ||
          rule.prefix < 0 || rule.prefix > bits) {
        return Bad("entry " + Quoted(text) + ": the prefix length must be 0 to " +
                   std::to_string(bits));
      }
    }
    IpAddress masked;
    masked.v6 = rule.network.v6;
    for (int bit = 0; bit < rule.prefix; ++bit) {
      const auto byte = static_cast<std::size_t>(bit / 8);
      const auto bit_mask = static_cast<std::uint8_t>(0x80U >> (bit % 8));
      masked.bytes[byte] =
          static_cast<std::uint8_t>(masked.bytes[byte] | (rule.network.bytes[byte] & bit_mask));
    }
    if (!(masked == rule.network)) {
      return Bad("entry " + Quoted(text) + " has host bits set: write " + masked.ToString() + "/" +
                 std::to_string(rule.prefix));
    }
    for (const auto& never : NeverRanges()) {
      if (rule.prefix >= never.prefix && PrefixMatches(never.network, never.prefix, rule.network)) {
        return Bad("entry " + Quoted(text) + " is " + never.what +
                   ": never reachable from a sandbox");
      }
    }
    return rule;
  }
  if (target.starts_with("*.")) {
    rule.kind = NetworkRule::Kind::kSuffix;
    target.remove_prefix(2);
  } else {
    rule.kind = NetworkRule::Kind::kHost;
  }
  if (target.find('*') != std::string_view::npos) {
    return Bad("entry " + Quoted(text) + ": '*' only as the first label, \"*.example.com\"");
  }
  auto host = NormalizeHostName(target);
  if (!host.ok()) return Bad("entry " + Quoted(text) + ": " + host.error().message());
  rule.host = std::move(*host);
  return rule;
}

std::string NeverReachable(const IpAddress& address) {
  for (const auto& never : NeverRanges()) {
    if (PrefixMatches(never.network, never.prefix, address)) {
      return address.ToString() + " is " + never.what + ": never reachable from a sandbox";
    }
  }
  return "";
}

NetworkDecision DecideName(const NetworkPolicy& policy, std::string_view host, std::uint16_t port) {
  if (policy.mode == NetworkPolicy::Mode::kNone) {
    return {false, "this sandbox has no network access"};
  }
  if (auto address = ParseIpAddress(host); address.ok()) {
    return DecideAddress(policy, *address, port, false);
  }
  auto name = NormalizeHostName(host);
  if (!name.ok()) return {false, name.error().message()};
  for (const auto& rule : policy.deny) {
    if (NameMatches(rule, *name) && PortIn(rule.ports, port)) {
      return {false, Target(*name, port) + " is denied by " + Quoted(rule.text)};
    }
  }
  for (const auto& rule : policy.allow) {
    if (NameMatches(rule, *name) && PortIn(rule.ports, port)) {
      return {true, Target(*name, port) + " is allowed by " + Quoted(rule.text)};
    }
  }
  return {false, Target(*name, port) + " is not in the allowlist"};
}

NetworkDecision DecideAddress(const NetworkPolicy& policy, const IpAddress& address,
                              std::uint16_t port, bool named) {
  if (policy.mode == NetworkPolicy::Mode::kNone) {
    return {false, "this sandbox has no network access"};
  }
  const std::string target = Target(address.ToString(), port);
  if (auto never = NeverReachable(address); !never.empty()) return {false, never};
  for (const auto& rule : policy.deny) {
    if (rule.kind == NetworkRule::Kind::kCidr && PortIn(rule.ports, port) &&
        PrefixMatches(rule.network, rule.prefix, address)) {
      return {false, target + " is denied by " + Quoted(rule.text)};
    }
  }
  for (const auto& rule : policy.allow) {
    if (rule.kind == NetworkRule::Kind::kCidr && PortIn(rule.ports, port) &&
        PrefixMatches(rule.network, rule.prefix, address)) {
      return {true, target + " is allowed by " + Quoted(rule.text)};
    }
  }
  if (!named) {
    return {false, target + " is not in the allowlist (an address needs an address or CIDR entry)"};
  }
  if (const char* kind = PrivateKind(address); kind != nullptr) {
    return {false, "the name resolves to " + address.ToString() + ", a " + kind +
                       " address that no address or CIDR entry allows"};
  }
  return {true, target + " is what an allowed name resolves to"};
}

Status CheckNarrows(const NetworkPolicy& policy, const NetworkPolicy& narrower) {
  if (narrower.mode == NetworkPolicy::Mode::kNone) return OkStatus();
  if (policy.mode == NetworkPolicy::Mode::kNone) {
    return Bad("the pool allows no network, and a request or session can only narrow that");
  }
  for (const auto& rule : narrower.allow) {
    const bool covered = std::any_of(policy.allow.begin(), policy.allow.end(),
                                     [&](const NetworkRule& outer) { return Covers(outer, rule); });
    if (!covered) {
      return Bad("allow entry " + Quoted(rule.text) + " is not within the pool's network policy (" +
                 DescribeNetworkPolicy(policy) + "): a request or session can only narrow it");
    }
  }
  return OkStatus();
}

NetworkPolicy Narrowed(const NetworkPolicy& policy, const NetworkPolicy& narrower) {
  if (policy.mode == NetworkPolicy::Mode::kNone || narrower.mode == NetworkPolicy::Mode::kNone) {
    return NetworkPolicy{};
  }
  NetworkPolicy out;
  out.mode = NetworkPolicy::Mode::kAllowlist;
  out.allow = narrower.allow;
  out.deny = policy.deny;
  out.deny.insert(out.deny.end(), narrower.deny.begin(), narrower.deny.end());
  out.pip_index_url = policy.pip_index_url;
  out.inject = policy.inject;
  return out;
}

std::string DescribeNetworkPolicy(const NetworkPolicy& policy) {
  if (policy.mode == NetworkPolicy::Mode::kNone) return "none";
  std::string out = "allowlist:";
  for (const auto& rule : policy.allow) out += " " + rule.text;
  if (policy.allow.empty()) out += " (nothing)";
  if (!policy.deny.empty()) {
    out += "; denied:";
    for (const auto& rule : policy.deny) out += " " + rule.text;
  }
  return out;
}

}  // namespace sandbox::config
