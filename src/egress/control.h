// The server's control lines over the proxy's stdin, one JSON object a line:
//   {"op":"set","addr":"10.213.1.5","pool":"data",
//    "policy":{"mode":"allowlist","allow":["pypi.org"],"deny":[]}}
//   {"op":"remove","addr":"10.213.1.5"}
//   {"op":"clear"}
//   {"op":"probe","addr":"10.213.0.1","port":3128}
//   {"op":"ca","cert":"-----BEGIN CERTIFICATE-----...","key":"-----BEGIN PRIVATE KEY-----..."}
//   {"op":"upstream_ca","pem":"-----BEGIN CERTIFICATE-----..."}
//   {"op":"counters"}
// and a set's optional credentials (injection.h), per host of its policy:
//   "inject":[{"host":"api.example.com","header":"Authorization","value":"Bearer ..."}]
//   (optional "port", default 443; "inject" needs the CA first)
// A member an op does not have is refused. No answer or error ever quotes a value, a key or
// the line.
// An optional "id" (any JSON value) is echoed in the answer. Each line is answered with an
// event: {"ev":"applied","op":...} or {"ev":"error","error":...} naming what was wrong (a bad
// entry by its list and index); a refused line leaves the table as it was. A probe is answered
// {"ev":"probe","addr":...,"port":...,"errno":N,"error":"<strerror>"} (errno 0: connected)
// once its connect is decided, within 2 s (probe.h). Counters are answered
// {"ev":"counters",...} with the members of the caller's CountersSource (the proxy's).
// Thread-safety: pure functions, and RunControl on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>

#include "event_sink.h"
#include "policy_table.h"
#include "sandbox/config/network_policy.h"
#include "sandbox/core/result.h"
#include "tls_authority.h"

namespace sandbox::egress {

struct ControlSet {
  config::IpAddress addr;
  PoolPolicy entry;
};
struct ControlRemove {
  config::IpAddress addr;
};
struct ControlClear {};
struct ControlProbe {
  config::IpAddress addr;
  std::uint16_t port = 0;
};
// The deployment CA that signs the leaf certificates of hosts with credentials.
struct ControlCa {
  std::shared_ptr<const CertificateAuthority> authority;
};
// CAs trusted for upstreams besides the system's.
struct ControlUpstreamCa {
  std::shared_ptr<const UpstreamTrust> trust;
};
// The proxy's counters, read while it runs.
struct ControlCounters {};
using ControlOp = std::variant<ControlSet, ControlRemove, ControlClear, ControlProbe, ControlCa,
                               ControlUpstreamCa, ControlCounters>;

// What a "counters" line is answered with (a JSON object); none: the op is refused.
using CountersSource = std::function<nlohmann::json()>;

// A control line is at most this long (a policy of a few hundred entries fits many times, and
// so does a PEM bundle of every public CA, about 220 KB), and nested at most this deep (a
// line needs 3 levels; sandbox::ParseJson refuses deeper input before building anything).
inline constexpr std::size_t kMaxControlLine = std::size_t{1} << 20;
inline constexpr int kMaxControlDepth = 8;

// Parses one line; the error says what is wrong with it.
Result<ControlOp> ParseControlLine(std::string_view line);

// Probes running at once in RunControl; one more is refused with an error.
inline constexpr int kMaxConcurrentProbes = 4;

// Parses and applies one line to `table`; returns the event that answers it (a probe's after
// its connect, up to 2 s later).
nlohmann::json ApplyControlLine(PolicyTable& table, TlsSettings& tls, std::string_view line,
                                const CountersSource& counters = {});

// Reads control lines from `fd` until its end (the server closed the proxy's stdin) or an
// error, applying each and emitting its answer. A line longer than kMaxControlLine is
// answered with an error and skipped. Probes run on threads of their own (so a probe never
// holds up the lines after it), at most kMaxConcurrentProbes at once; RunControl returns once
// the running ones are answered.
void RunControl(int fd, PolicyTable& table, TlsSettings& tls, EventSink& events,
                const CountersSource& counters = {});

}  // namespace sandbox::egress
