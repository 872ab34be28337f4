// One CONNECT tunnel to a host with credentials, terminated (docs/network.md, "Credentials"):
// a TLS server toward the code with a leaf certificate for the host (tls_authority.h), a TLS
// client toward the upstream that verifies it, and the HTTP/1.1 relay between their plaintexts
// (inject_relay.h). No sockets: the proxy's event loop moves ciphertext in and out (memory
// BIOs), so the TLS runs on the loop without blocking, and every buffer is bounded (reading a
// side stops while what it would produce cannot be taken).
// Thread-safety: one per connection, on the event loop.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "inject_relay.h"
#include "injection.h"
#include "sandbox/core/result.h"
#include "tls_authority.h"

namespace sandbox::egress {

class TlsIntercept {
 public:
  // `rule` must outlive the session. The client's first bytes (its ClientHello, already read
  // by the proxy) are given with FromClient.
  static Result<std::unique_ptr<TlsIntercept>> Start(const CertificateAuthority& authority,
                                                     const UpstreamTrust& trust,
                                                     const Injection& rule,
                                                     const http::HeadLimits& limits,
                                                     std::size_t buffer_bytes);

  // Ciphertext received from each side, and the end of each side's stream.
  void FromClient(std::string_view bytes);
  void FromUpstream(std::string_view bytes);
  void ClientEof();
  void UpstreamEof();
  // Runs both TLS sides and the relay as far as they go.
  void Pump();
  // Moves at most `max` bytes of ciphertext for each side to the end of `out`; how many.
  std::size_t TakeForClient(std::string& out, std::size_t max);
  std::size_t TakeForUpstream(std::string& out, std::size_t max);

  // Ciphertext waiting to be taken.
  std::size_t client_pending() const;
  std::size_t upstream_pending() const;
  bool wants_client_input() const;
  bool wants_upstream_input() const;
  // Both handshakes are over (the upstream's may have failed; the code then gets a 502).
  bool handshaken() const {
    return client_handshaken_ && (upstream_handshaken_ || upstream_failed_);
  }
  // Nothing more will be produced for the side: close it once what was taken is sent.
  bool client_finished() const;
  bool upstream_finished() const;

  const InjectRelay& relay() const { return relay_; }
  // Why the session ended early ("" if it did not): TLS first, then the relay's.
  std::string problem() const;

  ~TlsIntercept();
  TlsIntercept(const TlsIntercept&) = delete;
  TlsIntercept& operator=(const TlsIntercept&) = delete;

 private:
  TlsIntercept(const Injection& rule, const http::HeadLimits& limits, std::size_t buffer_bytes);
  bool PumpOnce();
  bool HandshakeClient();
  bool HandshakeUpstream();
  bool ReadClient();
  bool ReadUpstream();
  bool WriteUpstream();
  bool WriteClient();
  bool Shutdowns();
  void UpstreamFailed(const std::string& message);
  void ClientFailed(const std::string& message);

  const Injection& rule_;
  std::size_t buffer_bytes_;
  InjectRelay relay_;
  SslPtr client_;  // the TLS server the code talks to
  SslPtr upstream_;
  BIO* client_in_ = nullptr;  // owned by client_
  BIO* client_out_ = nullptr;
  BIO* upstream_in_ = nullptr;  // owned by upstream_
  BIO* upstream_out_ = nullptr;

  bool client_handshaken_ = false;
  bool upstream_handshaken_ = false;
  bool client_eof_ = false;  // the TCP stream ended
  bool upstream_eof_ = false;
  bool client_read_done_ = false;  // the relay was told the client's end
  bool upstream_read_done_ = false;
  bool client_failed_ = false;
  bool upstream_failed_ = false;
  bool client_shut_ = false;  // close_notify written
  bool upstream_shut_ = false;
  std::string problem_;
};

}  // namespace sandbox::egress
