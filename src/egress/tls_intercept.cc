#include "tls_intercept.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <array>

namespace sandbox::egress {
namespace {

constexpr std::size_t kRecord = std::size_t{16} << 10;  // a TLS record's plaintext at most

bool Retry(int error) { return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE; }

std::size_t Take(BIO* bio, std::string& out, std::size_t max) {
  const std::size_t n = std::min(BIO_ctrl_pending(bio), max);
  if (n == 0) return 0;
  const std::size_t old = out.size();
  out.resize(old + n);
  const int read = BIO_read(bio, out.data() + old, static_cast<int>(n));
  out.resize(old + static_cast<std::size_t>(std::max(read, 0)));
  return static_cast<std::size_t>(std::max(read, 0));
}

}  // namespace

TlsIntercept::TlsIntercept(const Injection& rule, const http::HeadLimits& limits,
                           std::size_t buffer_bytes)
    : rule_(rule), buffer_bytes_(buffer_bytes), relay_(rule, limits, buffer_bytes) {}

TlsIntercept::~TlsIntercept() = default;

Result<std::unique_ptr<TlsIntercept>> TlsIntercept::Start(const CertificateAuthority& authority,
                                                          const UpstreamTrust& trust,
                                                          const Injection& rule,
                                                          const http::HeadLimits& limits,
                                                          std::size_t buffer_bytes) {
  std::unique_ptr<TlsIntercept> session(new TlsIntercept(rule, limits, buffer_bytes));
  auto server = authority.NewServer(rule.host);
  if (!server.ok()) return server.error();
  auto client = trust.NewClient(rule.host);
  if (!client.ok()) return client.error();
  session->client_ = std::move(*server);
  session->upstream_ = std::move(*client);
  BIO* bios[4] = {BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()),
                  BIO_new(BIO_s_mem())};
  if (std::any_of(std::begin(bios), std::end(bios), [](BIO* b) { return b == nullptr; })) {
    for (BIO* b : bios) BIO_free(b);
    return Error(ErrorCode::kInternal, "cannot set up TLS: out of memory");
  }
  for (BIO* b : bios) BIO_set_mem_eof_return(b, -1);  // empty: retry later, not the end
  session->client_in_ = bios[0];
  session->client_out_ = bios[1];
  session->upstream_in_ = bios[2];
  session->upstream_out_ = bios[3];
  SSL_set_bio(session->client_.get(), bios[0], bios[1]);
  SSL_set_bio(session->upstream_.get(), bios[2], bios[3]);
  SSL_set_accept_state(session->client_.get());
  SSL_set_connect_state(session->upstream_.get());
  return session;
}

void TlsIntercept::FromClient(std::string_view bytes) {
  if (!bytes.empty()) BIO_write(client_in_, bytes.data(), static_cast<int>(bytes.size()));
}

void TlsIntercept::FromUpstream(std::string_view bytes) {
  if (!bytes.empty()) BIO_write(upstream_in_, bytes.data(), static_cast<int>(bytes.size()));
}

void TlsIntercept::ClientEof() {
  client_eof_ = true;
  BIO_set_mem_eof_return(client_in_, 0);
}

void TlsIntercept::UpstreamEof() {
  upstream_eof_ = true;
  BIO_set_mem_eof_return(upstream_in_, 0);
}

void TlsIntercept::Pump() {
  for (int round = 0; round < 64 && PumpOnce(); ++round) {
  }
  ERR_clear_error();
}

bool TlsIntercept::PumpOnce() {
  bool progress = HandshakeClient();
  progress = HandshakeUpstream() || progress;
  progress = ReadClient() || progress;
  progress = ReadUpstream() || progress;
  progress = WriteUpstream() || progress;
  progress = WriteClient() || progress;
  progress = Shutdowns() || progress;
  return progress;
}

bool TlsIntercept::HandshakeClient() {
  if (client_handshaken_ || client_failed_) return false;
  ERR_clear_error();
  const int r = SSL_do_handshake(client_.get());
  if (r == 1) {
    client_handshaken_ = true;
    return true;
  }
  const int error = SSL_get_error(client_.get(), r);
  if (Retry(error) && !client_eof_) return false;
  std::string why = OpenSslErrors();
  const bool refused = why.empty() || why.find("unknown ca") != std::string::npos ||
                       why.find("certificate") != std::string::npos;
  if (why.empty()) why = "the client ended the connection";
  std::string message = "the TLS handshake with the client failed: " + why;
  if (refused) {
    message +=
        " (did it refuse the proxy's certificate? does the pool's image trust the "
        "deployment CA?)";
  }
  ClientFailed(message);
  return true;
}

bool TlsIntercept::HandshakeUpstream() {
  if (upstream_handshaken_ || upstream_failed_ || client_failed_) return false;
  ERR_clear_error();
  const int r = SSL_do_handshake(upstream_.get());
  if (r == 1) {
    upstream_handshaken_ = true;
    return true;
  }
  const int error = SSL_get_error(upstream_.get(), r);
  if (Retry(error) && !upstream_eof_) return false;
  const long verify = SSL_get_verify_result(upstream_.get());
  std::string why = OpenSslErrors();
  if (verify != X509_V_OK) {
    UpstreamFailed("the certificate of " + rule_.host +
                   " did not verify: " + X509_verify_cert_error_string(verify));
  } else {
    if (why.empty()) why = upstream_eof_ ? "it closed the connection" : "no reason given";
    UpstreamFailed("the TLS handshake with " + rule_.host + " failed: " + why);
  }
  return true;
}

bool TlsIntercept::ReadClient() {
  if (!client_handshaken_ || client_failed_ || client_read_done_) return false;
  bool progress = false;
  std::array<char, kRecord> buf{};
  while (relay_.wants_client_input()) {
    ERR_clear_error();
    const int n = SSL_read(client_.get(), buf.data(), static_cast<int>(buf.size()));
    if (n > 0) {
      relay_.FromClient(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      progress = true;
      continue;
    }
    const int error = SSL_get_error(client_.get(), n);
    if (Retry(error) && !client_eof_) break;
    if (error == SSL_ERROR_ZERO_RETURN || Retry(error) || error == SSL_ERROR_SYSCALL) {
      client_read_done_ = true;
      relay_.ClientEof();
      return true;
    }
    ClientFailed("the client's TLS failed: " + OpenSslErrors());
    return true;
  }
  return progress;
}

bool TlsIntercept::ReadUpstream() {
  if (!upstream_handshaken_ || upstream_failed_ || upstream_read_done_ || client_failed_) {
    return false;
  }
  bool progress = false;
  std::array<char, kRecord> buf{};
  while (relay_.wants_upstream_input()) {
    ERR_clear_error();
    const int n = SSL_read(upstream_.get(), buf.data(), static_cast<int>(buf.size()));
    if (n > 0) {
      relay_.FromUpstream(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      progress = true;
      continue;
    }
    const int error = SSL_get_error(upstream_.get(), n);
    if (Retry(error) && !upstream_eof_) break;
    if (error == SSL_ERROR_ZERO_RETURN || Retry(error) || error == SSL_ERROR_SYSCALL) {
      upstream_read_done_ = true;
      relay_.UpstreamEof();
      return true;
    }
    UpstreamFailed("the TLS connection with " + rule_.host + " failed: " + OpenSslErrors());
    return true;
  }
  return progress;
}

bool TlsIntercept::WriteUpstream() {
  if (!upstream_handshaken_ || upstream_failed_ || upstream_shut_ || client_failed_) return false;
  std::string& out = relay_.to_upstream();
  bool progress = false;
  while (!out.empty() && BIO_ctrl_pending(upstream_out_) < buffer_bytes_) {
    ERR_clear_error();
    const int n =
        SSL_write(upstream_.get(), out.data(), static_cast<int>(std::min(out.size(), kRecord)));
    if (n > 0) {
      out.erase(0, static_cast<std::size_t>(n));
      progress = true;
      continue;
    }
    if (Retry(SSL_get_error(upstream_.get(), n))) break;
    UpstreamFailed("the TLS connection with " + rule_.host + " failed: " + OpenSslErrors());
    return true;
  }
  return progress;
}

bool TlsIntercept::WriteClient() {
  if (!client_handshaken_ || client_failed_ || client_shut_) return false;
  std::string& out = relay_.to_client();
  bool progress = false;
  while (!out.empty() && BIO_ctrl_pending(client_out_) < buffer_bytes_) {
    ERR_clear_error();
    const int n =
        SSL_write(client_.get(), out.data(), static_cast<int>(std::min(out.size(), kRecord)));
    if (n > 0) {
      out.erase(0, static_cast<std::size_t>(n));
      progress = true;
      continue;
    }
    if (Retry(SSL_get_error(client_.get(), n))) break;
    ClientFailed("the client's TLS failed: " + OpenSslErrors());
    return true;
  }
  return progress;
}

bool TlsIntercept::Shutdowns() {
  bool progress = false;
  if (!upstream_shut_ && upstream_handshaken_ && !upstream_failed_ && relay_.upstream_done() &&
      relay_.to_upstream().empty()) {
    SSL_shutdown(upstream_.get());  // close_notify; the upstream's is not waited for
    upstream_shut_ = true;
    progress = true;
  }
  if (!client_shut_ && client_handshaken_ && !client_failed_ && relay_.client_done() &&
      relay_.to_client().empty()) {
    SSL_shutdown(client_.get());
    client_shut_ = true;
    progress = true;
  }
  ERR_clear_error();
  return progress;
}

void TlsIntercept::UpstreamFailed(const std::string& message) {
  upstream_failed_ = true;
  if (problem_.empty()) problem_ = message;
  relay_.UpstreamFailed(502, message);
}

void TlsIntercept::ClientFailed(const std::string& message) {
  client_failed_ = true;
  if (problem_.empty()) problem_ = message;
}

std::size_t TlsIntercept::TakeForClient(std::string& out, std::size_t max) {
  return Take(client_out_, out, max);
}

std::size_t TlsIntercept::TakeForUpstream(std::string& out, std::size_t max) {
  return Take(upstream_out_, out, max);
}

std::size_t TlsIntercept::client_pending() const { return BIO_ctrl_pending(client_out_); }

std::size_t TlsIntercept::upstream_pending() const { return BIO_ctrl_pending(upstream_out_); }

bool TlsIntercept::wants_client_input() const {
  return !client_eof_ && !client_finished() && BIO_ctrl_pending(client_in_) < buffer_bytes_;
}

bool TlsIntercept::wants_upstream_input() const {
  return !upstream_eof_ && !upstream_finished() && BIO_ctrl_pending(upstream_in_) < buffer_bytes_;
}

bool TlsIntercept::client_finished() const { return client_failed_ || client_shut_; }

bool TlsIntercept::upstream_finished() const {
  return upstream_failed_ || upstream_shut_ || client_failed_;
}

std::string TlsIntercept::problem() const { return problem_.empty() ? relay_.problem() : problem_; }

}  // namespace sandbox::egress
