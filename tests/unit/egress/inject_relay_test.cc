// Credentials in plaintext HTTP/1.1 (injection.h, scrubber.h, inject_relay.h): what a rule may
// say, what is scrubbed, and the relay's requests and responses byte for byte, without TLS (the
// TLS around it is proxy_tls_test.cc's).
#include "egress/inject_relay.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "egress/injection.h"
#include "egress/scrubber.h"
#include "sandbox/core/base64.h"

namespace sandbox::egress {
namespace {

constexpr char kToken[] = "sk-live-0123456789abcdef";
constexpr char kValue[] = "Bearer sk-live-0123456789abcdef";

Injection Rule() {
  Injection rule;
  rule.host = "api.example.com";
  rule.headers = {{"Authorization", kValue}};
  rule.scrub = ScrubPatterns(kValue);
  return rule;
}

TEST(InjectionTest, TheScrubPatternsAreTheValueTheCredentialAndTheirEncodings) {
  const auto patterns = ScrubPatterns("Bearer abc/def+ghi=");
  const std::vector<std::string> want = {
      "Bearer abc/def+ghi=", "Bearer abc\\/def+ghi=", Base64Encode("Bearer abc/def+ghi="),
      "abc/def+ghi=",        "abc\\/def+ghi=",        Base64Encode("abc/def+ghi=")};
  for (const auto& w : want) {
    EXPECT_NE(std::find(patterns.begin(), patterns.end(), w), patterns.end()) << w;
  }
  EXPECT_EQ(patterns.size(), want.size());
  for (std::size_t i = 1; i < patterns.size(); ++i) {
    EXPECT_GE(patterns[i - 1].size(), patterns[i].size());  // longest first
  }
  // A value without a scheme is scrubbed as it is.
  EXPECT_EQ(ScrubPatterns("0123456789").size(), 2U);
}

TEST(InjectionTest, WhatARuleMayNotSay) {
  EXPECT_EQ(InjectableHeaderProblem("Authorization"), "");
  EXPECT_EQ(InjectableHeaderProblem("X-Api-Key"), "");
  for (const char* name : {"Host", "content-length", "Transfer-Encoding", "Connection",
                           "Proxy-Authorization", "Accept-Encoding", "Range", "X Key", ""}) {
    EXPECT_NE(InjectableHeaderProblem(name), "") << name;
  }
  EXPECT_EQ(SecretValueProblem(kValue), "");
  EXPECT_NE(SecretValueProblem("short").find("shorter than 8"), std::string::npos);
  EXPECT_NE(SecretValueProblem("Bearer abc").find("credential after \"Bearer \""),
            std::string::npos);
  EXPECT_NE(SecretValueProblem("Bearer sk-0123456789\r\nX: y").find("visible ASCII"),
            std::string::npos);
  EXPECT_NE(SecretValueProblem(std::string(5000, 'a')).find("longer than"), std::string::npos);
  // Never the value itself.
  EXPECT_EQ(SecretValueProblem("Bearer sk-0123456789\n").find("sk-"), std::string::npos);
}

TEST(ScrubberTest, AnOccurrenceSplitAtAnyPointIsScrubbedAndLengthsStay) {
  const std::vector<std::string> patterns = ScrubPatterns(kValue);
  const std::string text = std::string("{\"headers\":{\"Authorization\":\"") + kValue +
                           "\"},\"token\":\"" + kToken + "\",\"end\":1}";
  std::string want = text;
  for (const std::string& secret : {std::string(kValue), std::string(kToken)}) {
    for (auto at = want.find(secret); at != std::string::npos; at = want.find(secret, at)) {
      want.replace(at, secret.size(), std::string(secret.size(), '*'));
    }
  }
  for (std::size_t split = 0; split <= text.size(); ++split) {
    Scrubber scrubber(patterns);
    std::string out;
    scrubber.Feed(std::string_view{text}.substr(0, split), out);
    EXPECT_LE(scrubber.held(), patterns.front().size() - 1);
    scrubber.Feed(std::string_view{text}.substr(split), out);
    scrubber.Finish(out);
    EXPECT_EQ(out, want) << "split at " << split;
    EXPECT_EQ(scrubber.count(), 2U);
  }
  // One byte at a time.
  Scrubber scrubber(patterns);
  std::string out;
  for (char c : text) scrubber.Feed(std::string_view(&c, 1), out);
  scrubber.Finish(out);
  EXPECT_EQ(out, want);
}

// Decodes a chunked body that starts at `body`; "" on a malformed one.
std::string Dechunk(std::string_view body) {
  std::string out;
  for (;;) {
    const auto eol = body.find("\r\n");
    if (eol == std::string_view::npos) return "";
    const std::size_t size = std::stoul(std::string(body.substr(0, eol)), nullptr, 16);
    body.remove_prefix(eol + 2);
    if (size == 0) return body == "\r\n" ? out : "";
    out.append(body.substr(0, size));
    if (body.substr(size, 2) != "\r\n") return "";
    body.remove_prefix(size + 2);
  }
}

class InjectRelayTest : public ::testing::Test {
 protected:
  std::string TakeUpstream() { return std::exchange(relay_.to_upstream(), {}); }
  std::string TakeClient() { return std::exchange(relay_.to_client(), {}); }

  Injection rule_ = Rule();
  InjectRelay relay_{rule_, http::HeadLimits{}, std::size_t{64} << 10};
};

TEST_F(InjectRelayTest, TheRequestCarriesTheRulesHeaderInsteadOfTheCodes) {
  relay_.FromClient(
      "GET /v1/x?y=1 HTTP/1.1\r\nHost: API.example.com:443\r\nauthorization: Bearer fake\r\n"
      "Accept-Encoding: gzip, br\r\nRange: bytes=3-9\r\nIf-Range: \"e\"\r\nX-Kept: 1\r\n"
      "Proxy-Authorization: Basic eDp5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"
      "Content-Length: 4\r\n\r\nab");
  EXPECT_EQ(TakeUpstream(),
            std::string("GET /v1/x?y=1 HTTP/1.1\r\nHost: api.example.com\r\nX-Kept: 1\r\n") +
                "Authorization: " + kValue +
                "\r\nAccept-Encoding: identity\r\nContent-Length: 4\r\n\r\nab");
  relay_.FromClient("cd");
  EXPECT_EQ(TakeUpstream(), "cd");
  EXPECT_EQ(relay_.requests(), 1U);
  EXPECT_FALSE(relay_.client_done());
}

TEST_F(InjectRelayTest, ARequestForAnotherHostOrWithAChunkedBodyIsRefused) {
  relay_.FromClient("GET / HTTP/1.1\r\nHost: evil.example.com\r\n\r\n");
  EXPECT_EQ(TakeUpstream(), "");
  const std::string answer = TakeClient();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403 Forbidden\r\n")) << answer;
  EXPECT_NE(answer.find("for api.example.com only"), std::string::npos) << answer;
  EXPECT_TRUE(relay_.client_done());
  EXPECT_TRUE(relay_.upstream_done());

  InjectRelay chunked(rule_, http::HeadLimits{}, 65536);
  chunked.FromClient(
      "POST / HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_TRUE(chunked.to_client().starts_with("HTTP/1.1 411 Length Required\r\n"))
      << chunked.to_client();
  EXPECT_EQ(chunked.to_upstream(), "");
}

TEST_F(InjectRelayTest, AReflectedSecretIsScrubbedFromHeadAndBodyAndTheConnectionIsKept) {
  relay_.FromClient("GET /echo HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  TakeUpstream();
  const std::string body = std::string("you sent: ") + kValue + " and " + kToken;
  relay_.FromUpstream(std::string("HTTP/1.1 200 OK\r\nX-Echo: ") + kValue +
                      "\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: keep-alive\r\n\r\n" + body.substr(0, 20));
  relay_.FromUpstream(body.substr(20));
  const std::string stars(sizeof(kValue) - 1, '*');
  EXPECT_EQ(TakeClient(), "HTTP/1.1 200 OK\r\nX-Echo: " + stars + "\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\nyou sent: " + stars + " and " +
                              std::string(sizeof(kToken) - 1, '*'));
  EXPECT_EQ(relay_.scrubbed(), 3U);
  EXPECT_EQ(relay_.last_status(), 200);
  EXPECT_FALSE(relay_.client_done());

  // The next request on the same connection; a chunked response, the secret split between
  // chunks, is decoded, scrubbed and chunked again.
  relay_.FromClient("GET /again HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  EXPECT_TRUE(TakeUpstream().starts_with("GET /again HTTP/1.1\r\n"));
  const std::string half(kToken, 10);
  relay_.FromUpstream(
      std::string("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n<") + half +
      "\r\n");
  relay_.FromUpstream("f\r\n" + std::string(kToken + 10) + ">\r\n0\r\nX-Trailer: 1\r\n\r\n");
  const std::string out = TakeClient();
  const auto head_end = out.find("\r\n\r\n") + 4;
  EXPECT_EQ(out.substr(0, head_end), "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(Dechunk(std::string_view(out).substr(head_end)),
            "<" + std::string(sizeof(kToken) - 1, '*') + ">")
      << out;
  EXPECT_EQ(out.find("X-Trailer"), std::string::npos);
  EXPECT_EQ(relay_.requests(), 2U);
  EXPECT_FALSE(relay_.client_done());
}

TEST_F(InjectRelayTest, AnEncodedResponseIsA502) {
  relay_.FromClient("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  relay_.FromUpstream("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nxyz");
  const std::string answer = TakeClient();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << answer;
  EXPECT_NE(answer.find("Content-Encoding gzip"), std::string::npos) << answer;
  EXPECT_TRUE(relay_.client_done());

  // The proxy's answer never quotes what the upstream sent.
  InjectRelay quoting(rule_, http::HeadLimits{}, 65536);
  quoting.FromClient("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  quoting.FromUpstream(std::string("HTTP/1.1 200 OK\r\nContent-Encoding: ") + kToken +
                       "\r\nContent-Length: 3\r\n\r\nxyz");
  EXPECT_NE(quoting.to_client().find("Content-Encoding (an unknown coding)"), std::string::npos)
      << quoting.to_client();
  EXPECT_EQ(quoting.to_client().find(kToken), std::string::npos) << quoting.to_client();
  EXPECT_EQ(quoting.problem().find(kToken), std::string::npos) << quoting.problem();
}

TEST_F(InjectRelayTest, AnHttp10ClientGetsADecodedBodyAndTheClose) {
  relay_.FromClient("GET / HTTP/1.0\r\nHost: api.example.com\r\n\r\n");
  EXPECT_NE(TakeUpstream().find("\r\nConnection: close\r\n"), std::string::npos);
  relay_.FromUpstream(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
      "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(TakeClient(), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc");
  EXPECT_TRUE(relay_.client_done());
}

TEST_F(InjectRelayTest, AFailedUpstreamAnswersTheNextRequestWith502) {
  relay_.UpstreamFailed(502, "the certificate of api.example.com did not verify");
  EXPECT_TRUE(relay_.upstream_done());
  EXPECT_FALSE(relay_.client_done());
  relay_.FromClient("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  EXPECT_EQ(TakeUpstream(), "");
  const std::string answer = TakeClient();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n")) << answer;
  EXPECT_NE(answer.find("did not verify"), std::string::npos);
}

TEST_F(InjectRelayTest, AResponseWithoutLengthEndsAtTheUpstreamsCloseAndClosesTheClient) {
  relay_.FromClient("GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  relay_.FromUpstream(std::string("HTTP/1.1 200 OK\r\n\r\n") + kToken);
  EXPECT_EQ(TakeClient(), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");  // the tail is held
  relay_.UpstreamEof();
  EXPECT_EQ(TakeClient(), std::string(sizeof(kToken) - 1, '*'));
  EXPECT_TRUE(relay_.client_done());
  EXPECT_EQ(relay_.problem(), "");
}

}  // namespace
}  // namespace sandbox::egress
