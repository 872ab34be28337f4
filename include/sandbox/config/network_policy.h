// What a pool's code may reach over the network (pools[].network): the policy as a value, the
// grammar of its entries, what it allows, and how a request or session may narrow it. The
// egress proxy enforces the decisions; this file only makes them (docs/network.md).
//
// An entry is a string: a host name ("pypi.org"), a suffix ("*.pythonhosted.org": any name
// below it, not the name itself), an address ("203.0.113.7", "2001:db8::1") or a CIDR
// ("10.20.0.0/16", "2001:db8::/32"), optionally followed by ports: ":443", ":80,443",
// ":8000-8100" or ":*" (IPv6 then in brackets: "[2001:db8::]/32:443"). No ports: 80 and 443.
//
// Some addresses are never reachable, whatever the policy says (loopback, link-local with the
// cloud metadata service at 169.254.169.254, multicast, unspecified and reserved); private ones
// (RFC 1918, unique-local, shared CGNAT space) only through an address or CIDR entry that
// covers them, never through a name that resolves there (DNS rebinding).
// Thread-safety: values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"

namespace sandbox::config {

struct PortRange {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  bool operator==(const PortRange&) const = default;
};

// An IPv4 or IPv6 address; IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are held as IPv4 so
// that one address has one spelling for every rule.
struct IpAddress {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};  // IPv4: the first 4
  bool operator==(const IpAddress&) const = default;
  std::string ToString() const;
};

struct NetworkRule {
  enum class Kind { kHost, kSuffix, kCidr };
  Kind kind = Kind::kHost;
  std::string host;   // kHost, kSuffix: lower case, no trailing dot
  IpAddress network;  // kCidr (an address is a CIDR of full length)
  int prefix = 0;
  std::vector<PortRange> ports;  // never empty once parsed
  std::string text;              // the entry as written, for messages
  bool operator==(const NetworkRule&) const = default;
};

// A header the egress proxy adds to the requests for one host, its value from the server's
// environment (network.inject; the code never sees it: docs/network.md, "Credentials").
struct CredentialInjection {
  std::string host;       // an exact name, lower case
  std::string header;     // "Authorization"
  std::string value_env;  // the server's environment variable holding the value
  bool operator==(const CredentialInjection&) const = default;
};

struct NetworkPolicy {
  enum class Mode { kNone, kAllowlist };
  Mode mode = Mode::kNone;
  std::vector<NetworkRule> allow;
  std::vector<NetworkRule> deny;
  // Carried with the policy, not part of its decisions: the index pip uses ("" : pip's own
  // default), and the credentials the proxy adds.
  std::string pip_index_url;
  std::vector<CredentialInjection> inject;
  bool operator==(const NetworkPolicy&) const = default;
};

// Parses one entry; the error says what is wrong with it (without the configuration path).
Result<NetworkRule> ParseNetworkRule(std::string_view text);

// Parses an address literal (no brackets, no port); IPv4-mapped IPv6 becomes IPv4.
Result<IpAddress> ParseIpAddress(std::string_view text);

// A host name as the proxy receives it (HTTP Host, CONNECT target, TLS SNI) in the form rules
// use: lower case, no trailing dot; an error for what is not a host name.
Result<std::string> NormalizeHostName(std::string_view name);

struct NetworkDecision {
  bool allowed = false;
  std::string reason;  // why, naming the entry that decided or the rule that refused
};

// A connection to a name (before it is resolved).
NetworkDecision DecideName(const NetworkPolicy& policy, std::string_view host, std::uint16_t port);

// A connection to an address: `named` when it is what an allowed name resolved to (then a
// private address needs an address entry too), false for a raw address.
NetworkDecision DecideAddress(const NetworkPolicy& policy, const IpAddress& address,
                              std::uint16_t port, bool named);

// Why `address` can never be reached ("" when it can be, given a policy that allows it).
std::string NeverReachable(const IpAddress& address);

// Checks that `narrower` allows nothing `policy` does not: every allow entry within one of
// `policy`'s (its names below a suffix or equal, its CIDR inside, its ports among the same
// entry's). Deny entries may be anything. Errors name the entry that is wider.
Status CheckNarrows(const NetworkPolicy& policy, const NetworkPolicy& narrower);

// `policy` narrowed by `narrower` (checked with CheckNarrows first): `narrower`'s allow entries
// and both deny lists; mode none when either is none.
NetworkPolicy Narrowed(const NetworkPolicy& policy, const NetworkPolicy& narrower);

// One line for run_python's description and sandbox_info: "none" or the entries.
std::string DescribeNetworkPolicy(const NetworkPolicy& policy);

}  // namespace sandbox::config
