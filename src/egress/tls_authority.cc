#include "tls_authority.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <array>
#include <cstdio>
#include <utility>

namespace sandbox::egress {
namespace {

using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BN_free>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION_free>>;

constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr long kRenewBeforeSeconds = 3600;
constexpr int kMaxChain = 8;

Error Bad(std::string message) { return Error(ErrorCode::kInvalidArgument, std::move(message)); }

BioPtr MemoryBio(std::string_view text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every PEM certificate in `pem`, in order; an error (without a field name) for a malformed one.
Result<std::vector<X509Ptr>> ReadCertificates(std::string_view pem, std::size_t max) {
  std::vector<X509Ptr> out;
  BioPtr bio = MemoryBio(pem);
  if (!bio) return Error(ErrorCode::kInternal, "out of memory");
  for (;;) {
    ERR_clear_error();
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) {
      const unsigned long error = ERR_peek_last_error();
      ERR_clear_error();
      if (ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE) {
        break;  // the end: nothing more that looks like PEM
      }
      return Bad("certificate " + std::to_string(out.size() + 1) + " is malformed");
    }
    if (out.size() >= max) return Bad("more than " + std::to_string(max) + " certificates");
    out.push_back(std::move(cert));
  }
  if (out.empty()) return Bad("no PEM certificate (-----BEGIN CERTIFICATE-----) in it");
  return out;
}

// Refuses every passphrase: the key must come unencrypted (it lives in memory only).
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

std::string TimeText(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return "";
  std::array<char, 80> out{};
  std::snprintf(out.data(), out.size(), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return out.data();
}

int SelectHttp11(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
                 const unsigned char* in, unsigned int inlen, void* /*arg*/) {
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kAlpnHttp11, sizeof(kAlpnHttp11), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no http/1.1 offered: no ALPN, and HTTP/1.1 it is
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// OpenSSL's macros for these cast in C style (-Wold-style-cast): their calls, spelled out.
long SetServerName(SSL* ssl, const std::string& host) {
  return SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                  const_cast<char*>(host.c_str()));
}
long AddChainCert(SSL* ssl, X509* cert) {
  return SSL_ctrl(ssl, SSL_CTRL_CHAIN_CERT, 1, cert);  // 1: a reference of its own
}

bool AddExtension(X509* leaf, X509V3_CTX* ctx, int nid, const char* value) {
  ExtensionPtr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
  return ext && X509_add_ext(leaf, ext.get(), -1) == 1;
}

}  // namespace

std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long error = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(error);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : "error " + std::to_string(error);
  }
  return out;
}

Result<std::shared_ptr<const CertificateAuthority>> CertificateAuthority::Load(
    std::string_view cert_pem, std::string_view key_pem) {
  std::shared_ptr<CertificateAuthority> ca(new CertificateAuthority());
  auto certs = ReadCertificates(cert_pem, kMaxChain);
  if (!certs.ok()) return Bad("\"cert\": " + certs.error().message());
  ca->cert_ = std::move((*certs)[0]);
  for (std::size_t i = 1; i < certs->size(); ++i) ca->chain_.push_back(std::move((*certs)[i]));

  if (key_pem.find("ENCRYPTED") != std::string_view::npos) {
    return Bad("\"key\": an encrypted key; the proxy takes it unencrypted (in memory only)");
  }
  BioPtr key_bio = MemoryBio(key_pem);
  ERR_clear_error();
  ca->key_.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr));
  ERR_clear_error();
  if (!ca->key_) return Bad("\"key\": no PEM private key (-----BEGIN PRIVATE KEY-----) in it");
  if (X509_check_private_key(ca->cert_.get(), ca->key_.get()) != 1) {
    ERR_clear_error();
    return Bad("\"key\" is not the key of \"cert\"");
  }
  X509* cert = ca->cert_.get();
  const std::uint32_t flags = X509_get_extension_flags(cert);
  if ((flags & EXFLAG_CA) == 0) {
    return Bad("\"cert\" is not a CA certificate (it needs basicConstraints CA:TRUE)");
  }
  if ((flags & EXFLAG_KUSAGE) != 0 && (X509_get_key_usage(cert) & KU_KEY_CERT_SIGN) == 0) {
    return Bad("\"cert\" may not sign certificates (its keyUsage lacks keyCertSign)");
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    return Bad("\"cert\" expired on " + TimeText(X509_get0_notAfter(cert)));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
    return Bad("\"cert\" is not valid before " + TimeText(X509_get0_notBefore(cert)));
  }

  ca->leaf_key_.reset(EVP_EC_gen("P-256"));
  ca->server_ctx_.reset(SSL_CTX_new(TLS_server_method()));
  if (!ca->leaf_key_ || !ca->server_ctx_) {
    return Error(ErrorCode::kInternal, "cannot set up TLS: " + OpenSslErrors());
  }
  SSL_CTX* ctx = ca->server_ctx_.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                               SSL_OP_NO_TICKET | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_alpn_select_cb(ctx, SelectHttp11, nullptr);
  return std::shared_ptr<const CertificateAuthority>(std::move(ca));
}

CertificateAuthority::~CertificateAuthority() = default;

Result<X509Ptr> CertificateAuthority::Mint(const std::string& host) const {
  X509Ptr leaf(X509_new());
  if (!leaf) return Error(ErrorCode::kInternal, "out of memory");
  X509* x = leaf.get();
  std::array<unsigned char, 16> serial{};
  RAND_bytes(serial.data(), static_cast<int>(serial.size()));
  serial[0] &= 0x7F;  // positive
  BignumPtr bn(BN_bin2bn(serial.data(), static_cast<int>(serial.size()), nullptr));
  bool ok = bn && X509_set_version(x, 2) == 1 &&
            BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x)) != nullptr &&
            X509_gmtime_adj(X509_getm_notBefore(x), -kRenewBeforeSeconds) != nullptr &&
            X509_gmtime_adj(X509_getm_notAfter(x), kLeafValiditySeconds) != nullptr;
  if (ok && ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(cert_.get())) > 0) {
    ok = X509_set1_notAfter(x, X509_get0_notAfter(cert_.get())) == 1;
  }
  // A CN holds 64 characters; a longer name is in the SAN alone (then critical, RFC 5280).
  const bool cn = host.size() <= 64;
  if (ok && cn) {
    ok = X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                    reinterpret_cast<const unsigned char*>(host.c_str()), -1, -1,
                                    0) == 1;
  }
  ok = ok && X509_set_issuer_name(x, X509_get_subject_name(cert_.get())) == 1 &&
       X509_set_pubkey(x, leaf_key_.get()) == 1;
  X509V3_CTX v3{};
  X509V3_set_ctx(&v3, cert_.get(), x, nullptr, nullptr, 0);
  ok = ok && AddExtension(x, &v3, NID_basic_constraints, "critical,CA:FALSE") &&
       AddExtension(x, &v3, NID_key_usage, "critical,digitalSignature") &&
       AddExtension(x, &v3, NID_ext_key_usage, "serverAuth") &&
       AddExtension(x, &v3, NID_subject_key_identifier, "hash") &&
       AddExtension(x, &v3, NID_authority_key_identifier, "keyid");
  if (ok) {
    // The name as a DNS SAN, built as a value (no configuration string to parse).
    GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
    GENERAL_NAME* name = GENERAL_NAME_new();
    ASN1_IA5STRING* text = ASN1_IA5STRING_new();
    ok = names != nullptr && name != nullptr && text != nullptr &&
         ASN1_STRING_set(text, host.data(), static_cast<int>(host.size())) == 1;
    if (ok) {
      GENERAL_NAME_set0_value(name, GEN_DNS, text);
      text = nullptr;
      ok = sk_GENERAL_NAME_push(names, name) > 0;
      if (ok) name = nullptr;
    }
    ok = ok &&
         X509_add1_ext_i2d(x, NID_subject_alt_name, names, cn ? 0 : 1, X509V3_ADD_DEFAULT) == 1;
    ASN1_IA5STRING_free(text);
    GENERAL_NAME_free(name);
    GENERAL_NAMES_free(names);
  }
  const int type = EVP_PKEY_get_base_id(key_.get());
  const EVP_MD* digest =
      type == EVP_PKEY_ED25519 || type == EVP_PKEY_ED448 ? nullptr : EVP_sha256();
  ok = ok && X509_sign(x, key_.get(), digest) > 0;
  if (!ok) {
    return Error(ErrorCode::kInternal,
                 "cannot mint a certificate for " + host + ": " + OpenSslErrors());
  }
  return leaf;
}

Result<SslPtr> CertificateAuthority::NewServer(const std::string& host) const {
  X509* leaf = nullptr;
  {
    const std::lock_guard lock(mutex_);
    const std::time_t now = std::time(nullptr);
    auto it = leaves_.find(host);
    if (it != leaves_.end() && now >= it->second.renew_after) {
      leaves_.erase(it);
      std::erase(minted_, host);
      it = leaves_.end();
    }
    if (it == leaves_.end()) {
      auto minted = Mint(host);
      if (!minted.ok()) return minted.error();
      while (leaves_.size() >= kMaxLeaves && !minted_.empty()) {
        leaves_.erase(minted_.front());
        minted_.pop_front();
      }
      const std::time_t renew = now + kLeafValiditySeconds - kRenewBeforeSeconds;
      it = leaves_.emplace(host, Leaf{std::move(*minted), renew}).first;
      minted_.push_back(host);
    }
    leaf = it->second.cert.get();
    X509_up_ref(leaf);
  }
  X509Ptr held(leaf);
  SslPtr ssl(SSL_new(server_ctx_.get()));
  bool ok = ssl && SSL_use_certificate(ssl.get(), leaf) == 1 &&
            SSL_use_PrivateKey(ssl.get(), leaf_key_.get()) == 1 &&
            AddChainCert(ssl.get(), cert_.get()) == 1;
  for (const X509Ptr& above : chain_) ok = ok && AddChainCert(ssl.get(), above.get()) == 1;
  if (!ok)
    return Error(ErrorCode::kInternal, "cannot set up TLS for " + host + ": " + OpenSslErrors());
  return ssl;
}

std::string CertificateAuthority::subject() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio) return "";
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert_.get()), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long size = BIO_ctrl(bio.get(), BIO_CTRL_INFO, 0, static_cast<void*>(&data));
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : "";
}

std::string CertificateAuthority::not_after() const {
  return TimeText(X509_get0_notAfter(cert_.get()));
}

std::string CertificateAuthority::sha256() const {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (X509_digest(cert_.get(), EVP_sha256(), digest.data(), &size) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

std::size_t CertificateAuthority::leaves() const {
  const std::lock_guard lock(mutex_);
  return leaves_.size();
}

Result<std::shared_ptr<const UpstreamTrust>> UpstreamTrust::Create(std::string_view extra_pem) {
  std::shared_ptr<UpstreamTrust> trust(new UpstreamTrust());
  trust->ctx_.reset(SSL_CTX_new(TLS_client_method()));
  if (!trust->ctx_) return Error(ErrorCode::kInternal, "cannot set up TLS: " + OpenSslErrors());
  SSL_CTX* ctx = trust->ctx_.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_set_default_verify_paths(ctx) != 1) ERR_clear_error();  // none: extras only
  if (SSL_CTX_set_alpn_protos(ctx, kAlpnHttp11, sizeof(kAlpnHttp11)) != 0) {
    return Error(ErrorCode::kInternal, "cannot set up TLS: " + OpenSslErrors());
  }
  if (!extra_pem.empty()) {
    auto certs = ReadCertificates(extra_pem, 4096);
    if (!certs.ok()) return Bad("\"pem\": " + certs.error().message());
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (const X509Ptr& cert : *certs) {
      if (X509_STORE_add_cert(store, cert.get()) != 1) ERR_clear_error();  // a duplicate
    }
    trust->extra_ = certs->size();
  }
  return std::shared_ptr<const UpstreamTrust>(std::move(trust));
}

Result<SslPtr> UpstreamTrust::NewClient(const std::string& host) const {
  SslPtr ssl(SSL_new(ctx_.get()));
  const bool ok =
      ssl && SetServerName(ssl.get(), host) == 1 && SSL_set1_host(ssl.get(), host.c_str()) == 1;
  if (!ok)
    return Error(ErrorCode::kInternal, "cannot set up TLS for " + host + ": " + OpenSslErrors());
  SSL_set_hostflags(ssl.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return ssl;
}

void TlsSettings::set_authority(std::shared_ptr<const CertificateAuthority> authority) {
  const std::lock_guard lock(mutex_);
  authority_ = std::move(authority);
}

std::shared_ptr<const CertificateAuthority> TlsSettings::authority() const {
  const std::lock_guard lock(mutex_);
  return authority_;
}

void TlsSettings::set_upstream_trust(std::shared_ptr<const UpstreamTrust> trust) {
  const std::lock_guard lock(mutex_);
  trust_ = std::move(trust);
}

Result<std::shared_ptr<const UpstreamTrust>> TlsSettings::upstream_trust() {
  const std::lock_guard lock(mutex_);
  if (!trust_) {
    auto created = UpstreamTrust::Create("");
    if (!created.ok()) return created.error();
    trust_ = std::move(*created);
  }
  return trust_;
}

}  // namespace sandbox::egress
