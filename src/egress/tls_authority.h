// The TLS the proxy speaks for hosts with credentials (injection.h; docs/network.md,
// "Credentials"): toward the code, leaf certificates minted on the fly for the host, signed by
// the deployment's CA (which the pool's image trusts); toward the upstream, a TLS client that
// verifies the upstream's certificate and name against the system's CAs (/etc/ssl/certs) and
// those the server adds. The CA's key arrives over the proxy's stdin (control.h) and lives in
// memory only. OpenSSL 3 (libssl3, libcrypto3).
// Thread-safety: CertificateAuthority and UpstreamTrust are immutable once loaded but for the
// leaf cache, which has its own lock; TlsSettings may be read and written from any thread.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"

namespace sandbox::egress {

template <auto Free>
struct OpenSslDeleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using SslPtr = std::unique_ptr<SSL, OpenSslDeleter<SSL_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslDeleter<SSL_CTX_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY_free>>;

// The reasons in OpenSSL's error queue of this thread ("" when empty), which it clears.
std::string OpenSslErrors();

// Leaf certificates: valid from an hour ago (clocks differ) for a day, never beyond the CA;
// minted again once less than an hour is left. At most kMaxLeaves are cached (the oldest
// minted goes first); minting one takes about a millisecond.
inline constexpr long kLeafValiditySeconds = 24L * 3600;
inline constexpr std::size_t kMaxLeaves = 256;

class CertificateAuthority {
 public:
  // The deployment CA: `cert_pem` its certificate, optionally followed by the certificates
  // above it up to the root (sent with every leaf), `key_pem` its private key (PEM, not
  // encrypted). Refused, naming the field: what is not PEM, a key that is not the
  // certificate's, a certificate that is no CA (basicConstraints CA:TRUE, keyCertSign), one
  // expired or not valid yet.
  static Result<std::shared_ptr<const CertificateAuthority>> Load(std::string_view cert_pem,
                                                                  std::string_view key_pem);

  // A TLS server for `host` (a normalized name), with its leaf certificate and the chain.
  Result<SslPtr> NewServer(const std::string& host) const;

  // For the control line's answer and the logs (never the key).
  std::string subject() const;
  std::string not_after() const;  // "2027-01-31T12:00:00Z"
  std::string sha256() const;     // of the certificate, hex
  std::size_t leaves() const;     // cached now

  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;
  ~CertificateAuthority();

 private:
  CertificateAuthority() = default;
  Result<X509Ptr> Mint(const std::string& host) const;

  SslCtxPtr server_ctx_;
  X509Ptr cert_;
  EvpPkeyPtr key_;
  std::vector<X509Ptr> chain_;  // above cert_
  EvpPkeyPtr leaf_key_;         // one key for every leaf (P-256), made at load

  struct Leaf {
    X509Ptr cert;
    std::time_t renew_after = 0;
  };
  mutable std::mutex mutex_;
  mutable std::map<std::string, Leaf> leaves_;
  mutable std::deque<std::string> minted_;  // oldest first, for eviction
};

class UpstreamTrust {
 public:
  // The system's CAs and those in `extra_pem` (PEM certificates; "" for none). Refused, naming
  // the field "pem", when it holds no certificate or a malformed one.
  static Result<std::shared_ptr<const UpstreamTrust>> Create(std::string_view extra_pem);

  // A TLS client for `host` that sends it as SNI, offers http/1.1 and verifies the upstream's
  // certificate chain and name.
  Result<SslPtr> NewClient(const std::string& host) const;
  std::size_t extra_certificates() const { return extra_; }

 private:
  UpstreamTrust() = default;
  SslCtxPtr ctx_;
  std::size_t extra_ = 0;
};

// What the control lines set and the proxy reads: the CA (none until the server sends one) and
// the upstream trust (the system's until the server adds to it).
class TlsSettings {
 public:
  void set_authority(std::shared_ptr<const CertificateAuthority> authority);
  std::shared_ptr<const CertificateAuthority> authority() const;
  void set_upstream_trust(std::shared_ptr<const UpstreamTrust> trust);
  Result<std::shared_ptr<const UpstreamTrust>> upstream_trust();

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const CertificateAuthority> authority_;
  std::shared_ptr<const UpstreamTrust> trust_;
};

}  // namespace sandbox::egress
