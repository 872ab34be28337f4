// The server name a TLS client asks for (SNI), read from its ClientHello before a byte of the
// tunnel is forwarded: the egress proxy requires it to equal the CONNECT target (no domain
// fronting between names), and refuses a tunnel that does not start with TLS at all.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sandbox::egress {

struct ClientHelloScan {
  enum class State {
    kNeedMore,      // the ClientHello is not complete yet
    kServerName,    // complete, with a host_name (in server_name)
    kNoServerName,  // complete, without the server_name extension
    kNotTls,        // the bytes do not start a TLS handshake
    kMalformed,     // a TLS handshake, but not a well-formed ClientHello (or too large)
  };
  State state = State::kNeedMore;
  std::string server_name;  // as sent; the caller checks and normalizes it
};

// A ClientHello is a few hundred bytes (about 2 KiB with post-quantum key shares); past this
// the proxy stops waiting for one.
inline constexpr std::size_t kMaxClientHelloBytes = std::size_t{32} << 10;

// Scans the first bytes a client sent in its tunnel (they only grow between calls).
ClientHelloScan ScanClientHello(std::string_view bytes);

// TLS alert descriptions the proxy sends when it refuses a handshake.
inline constexpr std::uint8_t kAlertAccessDenied = 49;
inline constexpr std::uint8_t kAlertUnrecognizedName = 112;
inline constexpr std::uint8_t kAlertInternalError = 80;

// A fatal TLS alert record (TLS 1.2 framing, which every TLS version's client reads before
// the handshake): the client's TLS library reports it at once, e.g. Python's
// "TLSV1_ALERT_ACCESS_DENIED", instead of a bare close.
std::string TlsAlert(std::uint8_t description);

}  // namespace sandbox::egress
