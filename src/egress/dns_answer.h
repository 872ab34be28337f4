// The null resolver's answer: every DNS query is answered NXDOMAIN at once with its question
// echoed, so a sandbox's resolver fails in microseconds instead of timing out (proxy-aware
// clients never ask it), and nothing leaves the proxy (no DNS exfiltration through it).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandbox::egress {

struct DnsAnswer {
  std::string response;  // the datagram to send back
  std::string name;      // the name asked for, dotted, non-printable bytes as \DDD ("." root)
};

// The NXDOMAIN answer to `query`, or nullopt for what is not one well-formed standard query
// with one question (responses, other opcodes, truncated or compressed questions): those are
// ignored. What follows the question (an EDNS record) is not echoed.
std::optional<DnsAnswer> NullDnsAnswer(std::string_view query);

}  // namespace sandbox::egress
