// Credentials outside the sandbox, end to end on loopback (docs/network.md, "Credentials"):
// the code's TLS client -> the proxy, which terminates TLS for the host with credentials with a
// leaf of the deployment CA -> a real TLS upstream in this process that echoes what it got. The
// PKI (the deployment CA, the upstream's CA and its certificate) is made here with OpenSSL,
// nothing is committed.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "egress/client_hello.h"
#include "egress/control.h"
#include "egress/tls_authority.h"
#include "sandbox/core/unique_fd.h"
#include "sandbox/http1/text.h"
#include "unit/egress/proxy_fixture.h"

namespace sandbox::egress {
namespace {

constexpr char kValue[] = "Bearer sk-test-7d2f9a41c0b3e8d5";
constexpr char kToken[] = "sk-test-7d2f9a41c0b3e8d5";

std::string Stars(const char* secret) { return std::string(std::string_view(secret).size(), '*'); }

using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free>>;

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_ctrl(bio, BIO_CTRL_INFO, 0, static_cast<void*>(&data));
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : "";
}

std::string Pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioText(bio.get());
}

std::string Pem(EVP_PKEY* key, const char* passphrase = nullptr) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (passphrase == nullptr) {
    PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_bio_PrivateKey(
        bio.get(), key, EVP_aes_256_cbc(), reinterpret_cast<const unsigned char*>(passphrase),
        static_cast<int>(std::string_view(passphrase).size()), nullptr, nullptr);
  }
  return BioText(bio.get());
}

struct KeyAndCert {
  EvpPkeyPtr key;
  X509Ptr cert;
};

// A certificate for `cn`: a CA (with name constraints when `names` is given), or a server
// certificate for `names` (a SAN list such as "DNS:a,DNS:b"); self-signed when `issuer` is null.
KeyAndCert MakeCertificate(const std::string& cn, bool ca, const KeyAndCert* issuer,
                           const char* names = nullptr) {
  KeyAndCert out{EvpPkeyPtr(EVP_EC_gen("P-256")), X509Ptr(X509_new())};
  X509* x = out.cert.get();
  X509_set_version(x, 2);
  static std::atomic<long> serial{1};
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 30L * 24 * 3600);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer->cert.get() : x;
  X509_set_issuer_name(x, X509_get_subject_name(signer));
  X509_set_pubkey(x, out.key.get());
  X509V3_CTX ctx{};
  X509V3_set_ctx(&ctx, signer, x, nullptr, nullptr, 0);
  const auto add = [&](int nid, const char* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    EXPECT_NE(ext, nullptr) << value;
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_subject_key_identifier, "hash");
  if (ca) {
    add(NID_basic_constraints, "critical,CA:TRUE");
    add(NID_key_usage, "critical,keyCertSign,cRLSign");
    if (names != nullptr) add(NID_name_constraints, names);
  } else {
    add(NID_basic_constraints, "CA:FALSE");
    add(NID_key_usage, "critical,digitalSignature");
    add(NID_ext_key_usage, "serverAuth");
    add(NID_subject_alt_name, names);
  }
  X509_sign(x, issuer != nullptr ? issuer->key.get() : out.key.get(), EVP_sha256());
  return out;
}

std::string SubjectOf(X509* cert, bool issuer = false) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), issuer ? X509_get_issuer_name(cert) : X509_get_subject_name(cert),
                     0, XN_FLAG_RFC2253);
  return BioText(bio.get());
}

long SetSni(SSL* ssl, const std::string& host) {
  return SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                  const_cast<char*>(host.c_str()));
}

bool WriteAll(SSL* ssl, std::string_view data) {
  while (!data.empty()) {
    const int n = SSL_write(ssl, data.data(), static_cast<int>(data.size()));
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads from `ssl` into `buffer` until it holds `needed` bytes or more; false at the end.
bool Fill(SSL* ssl, std::string& buffer, std::size_t needed) {
  char chunk[4096];
  while (buffer.size() < needed) {
    const int n = SSL_read(ssl, chunk, sizeof(chunk));
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

// Reads up to the end of a head ("\r\n\r\n"); the head is taken from the front of `buffer`.
std::string ReadHead(SSL* ssl, std::string& buffer) {
  for (;;) {
    const auto end = buffer.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = buffer.substr(0, end + 4);
      buffer.erase(0, end + 4);
      return head;
    }
    if (!Fill(ssl, buffer, buffer.size() + 1)) return "";
  }
}

// The value of header `name` (lower case) in `head`, or "".
std::string HeaderOf(const std::string& head, const std::string& name) {
  std::size_t at = 0;
  while ((at = head.find("\r\n", at)) != std::string::npos) {
    at += 2;
    const auto colon = head.find(':', at);
    const auto eol = head.find("\r\n", at);
    if (colon == std::string::npos || colon > eol) continue;
    std::string key = head.substr(at, colon - at);
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (key == name) return std::string(http::Trim(head.substr(colon + 1, eol - colon - 1)));
  }
  return "";
}

// Reads one line (without its CRLF) from the front of `buffer`; false at the end.
bool ReadLine(SSL* ssl, std::string& buffer, std::string& line) {
  for (;;) {
    const auto end = buffer.find("\r\n");
    if (end != std::string::npos) {
      line = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      return true;
    }
    if (!Fill(ssl, buffer, buffer.size() + 1)) return false;
  }
}

struct Response {
  std::string head;
  std::string body;
  bool complete = false;
};

// One response: its head, and its body by Content-Length or chunked (decoded).
Response ReadResponse(SSL* ssl, std::string& buffer) {
  Response out;
  out.head = ReadHead(ssl, buffer);
  if (out.head.empty()) return out;
  if (HeaderOf(out.head, "transfer-encoding") == "chunked") {
    std::string line;
    while (ReadLine(ssl, buffer, line)) {
      const std::size_t size = std::stoul(line, nullptr, 16);
      if (size == 0) {
        out.complete = ReadLine(ssl, buffer, line) && line.empty();
        return out;
      }
      if (!Fill(ssl, buffer, size + 2)) return out;
      out.body += buffer.substr(0, size);
      buffer.erase(0, size + 2);
    }
    return out;
  }
  const std::string length = HeaderOf(out.head, "content-length");
  const std::size_t n = length.empty() ? 0 : std::stoul(length);
  if (!Fill(ssl, buffer, n)) return out;
  out.body = buffer.substr(0, n);
  buffer.erase(0, n);
  out.complete = true;
  return out;
}

// The code's side: a TLS client through the proxy's tunnel.
struct TlsClient {
  Fd fd;
  SslCtxPtr ctx;
  SslPtr ssl;
  std::string buffer;
  std::string error;

  // Speaks TLS over `tunnel` (past the CONNECT's 200) to `sni`, trusting `anchor` only and
  // checking the name.
  bool Handshake(Fd tunnel, const std::string& sni, X509* anchor) {
    fd = std::move(tunnel);
    ctx.reset(SSL_CTX_new(TLS_client_method()));
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), anchor);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    ssl.reset(SSL_new(ctx.get()));
    SSL_set_fd(ssl.get(), fd.get());
    SetSni(ssl.get(), sni);
    SSL_set1_host(ssl.get(), sni.c_str());
    ERR_clear_error();
    if (SSL_connect(ssl.get()) == 1) return true;
    error = OpenSslErrors();
    return false;
  }
  X509Ptr Peer() const { return X509Ptr(SSL_get1_peer_certificate(ssl.get())); }
  bool Send(std::string_view request) { return WriteAll(ssl.get(), request); }
  Response Read() { return ReadResponse(ssl.get(), buffer); }
};

class ProxyTlsTest : public ProxyFixture {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes to sockets with write(): a closed peer
    // As docs/network.md creates it: limited to the hosts with credentials.
    deployment_ = MakeCertificate("sandbox-mcp test deployment CA", true, nullptr,
                                  "critical,permitted;DNS:api.example.com");
    upstream_ca_ = MakeCertificate("test upstream CA", true, nullptr);
    upstream_ =
        MakeCertificate("upstream", false, &upstream_ca_, "DNS:api.example.com,DNS:pypi.org");
    upstream_ctx_.reset(SSL_CTX_new(TLS_server_method()));
    SSL_CTX_use_certificate(upstream_ctx_.get(), upstream_.cert.get());
    SSL_CTX_use_PrivateKey(upstream_ctx_.get(), upstream_.key.get());
    ProxyFixture::SetUp();
    Control(
        {{"op", "ca"}, {"cert", Pem(deployment_.cert.get())}, {"key", Pem(deployment_.key.get())}});
    Control({{"op", "upstream_ca"}, {"pem", Pem(upstream_ca_.cert.get())}});
    SetInjection();
  }

  nlohmann::json Control(const nlohmann::json& line, const char* want = "applied") {
    auto answer = ApplyControlLine(table_, tls_, line.dump());
    EXPECT_EQ(answer["ev"], want) << answer.dump();
    return answer;
  }

  void SetInjection() {
    Control({{"op", "set"},
             {"addr", "127.0.0.1"},
             {"pool", "api"},
             {"policy",
              {{"mode", "allowlist"},
               {"allow", {"api.example.com:443", "pypi.org:443", "api.example.com:80"}}}},
             {"inject",
              {{{"host", "api.example.com"}, {"header", "Authorization"}, {"value", kValue}}}}});
  }

  // A tunnel through the proxy, answered 200.
  Fd Tunnel(const std::string& target) {
    Fd fd = Connect();
    EXPECT_TRUE(
        SendAll(fd.get(), "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"));
    EXPECT_EQ(ReadBytes(fd.get(), sizeof(kEstablished) - 1), kEstablished);
    return fd;
  }

  // The upstream: TLS with its own certificate, then HTTP/1.1 requests until the close. Each
  // is answered with its Authorization header in X-Echo-Authorization and the whole request
  // in the body; /chunked answers "auth=<Authorization>;" chunked, the value split between
  // two chunks sent apart (two TLS records, two reads at the proxy).
  void Serve(int fd) override {
    SslPtr ssl(SSL_new(upstream_ctx_.get()));
    SSL_set_fd(ssl.get(), fd);
    if (SSL_accept(ssl.get()) != 1) return;
    std::string buffer;
    for (;;) {
      const std::string head = ReadHead(ssl.get(), buffer);
      if (head.empty()) break;
      const std::string length = HeaderOf(head, "content-length");
      const std::size_t n = length.empty() ? 0 : std::stoul(length);
      if (!Fill(ssl.get(), buffer, n)) break;
      const std::string request = head + buffer.substr(0, n);
      buffer.erase(0, n);
      {
        const std::lock_guard lock(mutex_);
        received_.push_back(request);
      }
      const std::string auth = HeaderOf(head, "authorization");
      if (head.starts_with("GET /chunked ")) {
        const std::string body = "auth=" + auth + ";";
        const std::size_t half = body.size() / 2;
        auto chunk = [](std::string_view data) {
          char size[16];
          std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
          return size + std::string(data) + "\r\n";
        };
        WriteAll(ssl.get(), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                chunk(std::string_view{body}.substr(0, half)));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        WriteAll(ssl.get(), chunk(std::string_view{body}.substr(half)) + "0\r\n\r\n");
      } else {
        WriteAll(ssl.get(),
                 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Echo-Authorization: " + auth +
                     "\r\nContent-Length: " + std::to_string(request.size()) + "\r\n\r\n" +
                     request);
      }
      if (HeaderOf(head, "connection") == "close") break;
    }
    SSL_shutdown(ssl.get());
  }

  std::vector<std::string> Received() {
    const std::lock_guard lock(mutex_);
    return received_;
  }

  // Every event line so far, as text: a secret must be in none.
  std::string AllEvents() {
    std::string all;
    for (const auto& line : Settled()) all += line.dump() + "\n";
    return all;
  }

  KeyAndCert deployment_;
  KeyAndCert upstream_ca_;
  KeyAndCert upstream_;
  SslCtxPtr upstream_ctx_;
  std::vector<std::string> received_;
};

TEST_F(ProxyTlsTest, TheCredentialIsAddedTheCodesIsReplacedAndTheEchoComesBackScrubbed) {
  TlsClient client;
  ASSERT_TRUE(
      client.Handshake(Tunnel("api.example.com:443"), "api.example.com", deployment_.cert.get()))
      << client.error;
  // The code sees a leaf of the deployment CA for the host, valid for a day at most.
  const X509Ptr leaf = client.Peer();
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(SubjectOf(leaf.get(), true), SubjectOf(deployment_.cert.get()));
  EXPECT_EQ(X509_check_host(leaf.get(), "api.example.com", 0, 0, nullptr), 1);
  std::time_t in_a_day = std::time(nullptr) + std::time_t{24 * 3600 + 60};
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(leaf.get()), &in_a_day), 0);

  ASSERT_TRUE(client.Send(
      "GET /echo HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer code-sent-0123456\r\n"
      "Accept-Encoding: gzip\r\n\r\n"));
  const Response first = client.Read();
  ASSERT_TRUE(first.complete) << first.head;
  EXPECT_TRUE(first.head.starts_with("HTTP/1.1 200 OK\r\n")) << first.head;
  EXPECT_EQ(HeaderOf(first.head, "x-echo-authorization"), Stars(kValue));
  EXPECT_NE(first.body.find("Authorization: " + Stars(kValue) + "\r\n"), std::string::npos)
      << first.body;
  EXPECT_EQ(first.body.find(kToken), std::string::npos);
  EXPECT_EQ(first.body.find("code-sent"), std::string::npos);  // replaced, not added beside

  // The same connection again, a body with it; the code closes after it.
  ASSERT_TRUE(
      client.Send("POST /echo HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\n"
                  "Connection: close\r\n\r\nhello"));
  const Response second = client.Read();
  ASSERT_TRUE(second.complete) << second.head;
  EXPECT_TRUE(second.body.ends_with("\r\n\r\nhello")) << second.body;
  EXPECT_EQ(HeaderOf(second.head, "connection"), "close");
  client.fd.Reset();

  const auto received = Received();
  ASSERT_EQ(received.size(), 2U);
  for (const std::string& request : received) {
    EXPECT_NE(request.find("\r\nAuthorization: " + std::string(kValue) + "\r\n"), std::string::npos)
        << request;
    EXPECT_EQ(request.find("code-sent"), std::string::npos) << request;
    EXPECT_NE(request.find("\r\nAccept-Encoding: identity\r\n"), std::string::npos) << request;
    EXPECT_NE(request.find("\r\nHost: api.example.com\r\n"), std::string::npos) << request;
  }
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["injected"], true);
  EXPECT_EQ(event["requests"], 2);
  EXPECT_GE(event["scrubbed"].get<int>(), 3);
  EXPECT_EQ(event["sni"], "api.example.com");
  EXPECT_EQ(AllEvents().find(kToken), std::string::npos);
  EXPECT_EQ(proxy_->stats().injected, 1U);
}

TEST_F(ProxyTlsTest, ASecretSplitAcrossReadsAndChunksIsScrubbed) {
  TlsClient client;
  ASSERT_TRUE(
      client.Handshake(Tunnel("api.example.com:443"), "api.example.com", deployment_.cert.get()))
      << client.error;
  ASSERT_TRUE(client.Send("GET /chunked HTTP/1.1\r\nHost: api.example.com\r\n\r\n"));
  const Response response = client.Read();
  ASSERT_TRUE(response.complete) << response.head;
  EXPECT_EQ(response.body, "auth=" + Stars(kValue) + ";");
}

TEST_F(ProxyTlsTest, ATerminatedTunnelIsCutAtTheTimeLimit) {
  StopProxy();
  options_.max_conn_time = std::chrono::seconds(1);
  Start();
  TlsClient client;
  ASSERT_TRUE(
      client.Handshake(Tunnel("api.example.com:443"), "api.example.com", deployment_.cert.get()))
      << client.error;
  ASSERT_TRUE(client.Send("GET /echo HTTP/1.1\r\nHost: api.example.com\r\n\r\n"));
  const Response response = client.Read();
  ASSERT_TRUE(response.complete) << response.head;
  ReadToEof(client.fd.get());  // the connection stays open, kept alive, until the proxy cuts it
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_EQ(event["injected"], true);
  EXPECT_EQ(event["cut"], "time");
  EXPECT_NE(event["reason"].get<std::string>().find("limit of 1000 ms (--max-conn-time-ms)"),
            std::string::npos)
      << event.dump();
  EXPECT_EQ(proxy_->stats().cut_time, 1U);
}

TEST_F(ProxyTlsTest, AHelloForAnotherNameIsStillRefused) {
  const std::string answer =
      Exchange("CONNECT api.example.com:443 HTTP/1.1\r\n\r\n" + ClientHello("evil.example.com"));
  EXPECT_EQ(answer, kEstablished + TlsAlert(kAlertAccessDenied));
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "refused") << event.dump();
  EXPECT_FALSE(event.contains("injected"));
  EXPECT_TRUE(Received().empty());
}

TEST_F(ProxyTlsTest, AHostWithoutCredentialsIsTunnelledUntouched) {
  TlsClient client;
  // The code trusts the upstream's own CA, and the tunnel shows it the upstream's certificate.
  ASSERT_TRUE(client.Handshake(Tunnel("pypi.org:443"), "pypi.org", upstream_ca_.cert.get()))
      << client.error;
  const X509Ptr peer = client.Peer();
  ASSERT_NE(peer, nullptr);
  EXPECT_EQ(X509_cmp(peer.get(), upstream_.cert.get()), 0);
  ASSERT_TRUE(client.Send(
      "GET /echo HTTP/1.1\r\nHost: pypi.org\r\nAuthorization: Bearer code-own-0123456\r\n"
      "Connection: close\r\n\r\n"));
  const Response response = client.Read();
  ASSERT_TRUE(response.complete) << response.head;
  EXPECT_EQ(HeaderOf(response.head, "x-echo-authorization"), "Bearer code-own-0123456");
  client.fd.Reset();
  const auto event = LastConnEvent();
  EXPECT_EQ(event["verdict"], "allowed") << event.dump();
  EXPECT_FALSE(event.contains("injected"));
  EXPECT_EQ(proxy_->stats().injected, 0U);
}

TEST_F(ProxyTlsTest, PlainHttpToAHostWithCredentialsIs403) {
  const std::string answer =
      Exchange("GET http://api.example.com/v1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403 Forbidden\r\n")) << answer;
  EXPECT_NE(answer.find("over HTTPS only"), std::string::npos) << answer;
  EXPECT_EQ(server_->accepted(), 0);
}

TEST_F(ProxyTlsTest, AnUpstreamThatDoesNotVerifyIsA502ForTheCode) {
  tls_.set_upstream_trust(*UpstreamTrust::Create(""));  // the system's CAs only
  TlsClient client;
  ASSERT_TRUE(
      client.Handshake(Tunnel("api.example.com:443"), "api.example.com", deployment_.cert.get()))
      << client.error;
  ASSERT_TRUE(client.Send("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n"));
  const Response response = client.Read();
  EXPECT_TRUE(response.head.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << response.head;
  EXPECT_NE(response.body.find("the certificate of api.example.com did not verify"),
            std::string::npos)
      << response.body;
  client.fd.Reset();
  const auto event = LastConnEvent();
  EXPECT_NE(event["reason"].get<std::string>().find("did not verify"), std::string::npos)
      << event.dump();
  EXPECT_TRUE(Received().empty());
}

TEST_F(ProxyTlsTest, ACodeThatDoesNotTrustTheDeploymentCaFailsItsHandshake) {
  TlsClient client;
  EXPECT_FALSE(
      client.Handshake(Tunnel("api.example.com:443"), "api.example.com", upstream_ca_.cert.get()));
  client.fd.Reset();
  const auto event = LastConnEvent();
  EXPECT_NE(event["reason"].get<std::string>().find("trust the deployment CA"), std::string::npos)
      << event.dump();
  EXPECT_TRUE(Received().empty());
}

TEST_F(ProxyTlsTest, ABadCaLineIsRefusedNamingTheFieldAndQuotingNoKey) {
  const std::string cert = Pem(deployment_.cert.get());
  const std::string key = Pem(deployment_.key.get());
  struct Case {
    nlohmann::json line;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{{"op", "ca"}, {"cert", "junk"}, {"key", key}}, "\"cert\": no PEM certificate"},
      {{{"op", "ca"}, {"cert", cert}}, "\"key\" must be a PEM string"},
      {{{"op", "ca"}, {"cert", cert}, {"key", "junk"}}, "\"key\": no PEM private key"},
      {{{"op", "ca"}, {"cert", cert}, {"key", Pem(upstream_ca_.key.get())}},
       "\"key\" is not the key of \"cert\""},
      {{{"op", "ca"}, {"cert", Pem(upstream_.cert.get())}, {"key", Pem(upstream_.key.get())}},
       "\"cert\" is not a CA certificate"},
      {{{"op", "ca"}, {"cert", cert}, {"key", Pem(deployment_.key.get(), "secret-pass")}},
       "\"key\": an encrypted key"},
      {{{"op", "ca"}, {"cert", cert}, {"key", key}, {"chain", cert}}, "unknown member \"chain\""},
      {{{"op", "upstream_ca"}, {"pem", "junk"}}, "\"pem\": no PEM certificate"},
  };
  // A line of the key's base64, and of the certificate's: in no answer.
  const std::string key_line = key.substr(key.find('\n') + 1, 40);
  const std::string cert_line = cert.substr(cert.find('\n') + 1, 40);
  for (const Case& c : cases) {
    const auto answer = Control(c.line, "error");
    const std::string error = answer.value("error", "");
    EXPECT_NE(error.find(c.says), std::string::npos) << error;
    EXPECT_EQ(answer.dump().find(key_line), std::string::npos) << answer.dump();
    EXPECT_EQ(answer.dump().find(cert_line), std::string::npos) << answer.dump();
  }
  // The CA set before is still the one in use.
  EXPECT_EQ(tls_.authority()->subject(), SubjectOf(deployment_.cert.get()));
}

TEST_F(ProxyTlsTest, ABadInjectionRuleIsRefusedNamingItAndNeverItsValue) {
  const nlohmann::json policy = {{"mode", "allowlist"}, {"allow", {"api.example.com:443"}}};
  const auto set = [&](const nlohmann::json& rule) {
    return nlohmann::json{{"op", "set"},
                          {"addr", "127.0.0.2"},
                          {"pool", "p"},
                          {"policy", policy},
                          {"inject", {rule}}};
  };
  struct Case {
    nlohmann::json rule;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{{"host", "api.example.com"}, {"header", "Authorization"}, {"value", "Bearer sk-1"}},
       "inject[0].value: the credential after \"Bearer \" is shorter than 8 bytes"},
      {{{"host", "api.example.com"}, {"header", "Host"}, {"value", kValue}}, "inject[0].header"},
      {{{"host", "other.example.com"}, {"header", "Authorization"}, {"value", kValue}},
       "inject[0].host: the policy does not allow other.example.com:443"},
      {{{"host", "203.0.113.7"}, {"header", "Authorization"}, {"value", kValue}},
       "inject[0].host: an address"},
      {{{"host", "api.example.com"},
        {"port", 8443},
        {"header", "Authorization"},
        {"value", kValue}},
       "the policy does not allow api.example.com:8443"},
      {{{"host", "api.example.com"}, {"header", "Authorization"}, {"value", kValue}, {"x", 1}},
       "inject[0] has an unknown member \"x\""},
      {{{"host", "api.example.com"},
        {"header", "Authorization"},
        {"value", std::string(kValue) + "\n"}},
       "inject[0].value: only visible ASCII"},
  };
  for (const Case& c : cases) {
    const auto answer = Control(set(c.rule), "error");
    const std::string error = answer.value("error", "");
    EXPECT_NE(error.find(c.says), std::string::npos) << error;
    EXPECT_EQ(answer.dump().find("sk-"), std::string::npos) << answer.dump();
  }
  EXPECT_EQ(table_.Find(*config::ParseIpAddress("127.0.0.2")), nullptr);

  // Without a deployment CA, no rule is taken.
  PolicyTable table;
  TlsSettings tls;
  const auto answer = ApplyControlLine(
      table, tls,
      set({{"host", "api.example.com"}, {"header", "Authorization"}, {"value", kValue}}).dump());
  EXPECT_NE(answer.value("error", "").find("needs the deployment CA first"), std::string::npos)
      << answer.dump();
  // With one, the answer names the header, not the value.
  const auto applied =
      Control(set({{"host", "api.example.com"}, {"header", "Authorization"}, {"value", kValue}}));
  EXPECT_EQ(applied["inject"], nlohmann::json::array({"api.example.com:443 Authorization"}));
  EXPECT_EQ(applied.dump().find("sk-"), std::string::npos);
}

}  // namespace
}  // namespace sandbox::egress
