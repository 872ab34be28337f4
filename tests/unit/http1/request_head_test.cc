// The request head reader and parser of the connection guard, and its response framing.
#include "sandbox/http1/request_head.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/http1/response_framing.h"

namespace sandbox::http {
namespace {

HeadReader::Outcome ScanAll(const std::string& input, HeadLimits limits = {}) {
  HeadReader reader(limits);
  return reader.Scan(input);
}

const Refusal* RefusalOf(const HeadReader::Outcome& outcome) {
  return std::get_if<Refusal>(&outcome);
}

TEST(HeadReaderTest, FindsTheEndOfAHeadInPiecesScanningEachByteOnce) {
  const std::string head = "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\nBODY";
  HeadReader reader({});
  std::string input;
  for (std::size_t i = 0; i < head.size(); ++i) {
    input.push_back(head[i]);
    auto outcome = reader.Scan(input);
    if (auto* done = std::get_if<HeadReader::Complete>(&outcome)) {
      EXPECT_EQ(done->head_bytes, head.size() - 4);
      EXPECT_EQ(i, head.size() - 5);
      return;
    }
    ASSERT_TRUE(std::holds_alternative<HeadReader::NeedMore>(outcome)) << i;
  }
  FAIL() << "the head never completed";
}

TEST(HeadReaderTest, AcceptsBareLineFeeds) {
  auto outcome = ScanAll("GET / HTTP/1.1\nHost: x\n\n");
  ASSERT_TRUE(std::holds_alternative<HeadReader::Complete>(outcome));
}

TEST(HeadReaderTest, AnEndlessHeaderLineIsRefusedWith431BeforeItEnds) {
  std::string input = "GET / HTTP/1.1\r\nX-Big: " + std::string(9000, 'a');  // no newline
  const Refusal* refusal = nullptr;
  auto outcome = ScanAll(input);
  refusal = RefusalOf(outcome);
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->status, 431);
  EXPECT_EQ(refusal->limit, "max_header_line");
  EXPECT_NE(refusal->message.find("8192"), std::string::npos);
}

TEST(HeadReaderTest, ALongRequestLineIsRefusedWith414) {
  auto outcome = ScanAll("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n");
  ASSERT_NE(RefusalOf(outcome), nullptr);
  EXPECT_EQ(RefusalOf(outcome)->status, 414);
  // Even before the line ends.
  auto unfinished = ScanAll("GET /" + std::string(9000, 'a'));
  ASSERT_NE(RefusalOf(unfinished), nullptr);
  EXPECT_EQ(RefusalOf(unfinished)->status, 414);
}

TEST(HeadReaderTest, MoreHeadersThanTheLimitAre431NamingIt) {
  std::string input = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) input += "X-" + std::to_string(i) + ": v\r\n";
  input += "\r\n";
  auto outcome = ScanAll(input);
  ASSERT_NE(RefusalOf(outcome), nullptr);
  EXPECT_EQ(RefusalOf(outcome)->status, 431);
  EXPECT_EQ(RefusalOf(outcome)->limit, "server.max_headers");
  EXPECT_EQ(RefusalOf(outcome)->value, 100);
  // Exactly the limit passes.
  std::string hundred = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 100; ++i) hundred += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_TRUE(std::holds_alternative<HeadReader::Complete>(ScanAll(hundred + "\r\n")));
}

TEST(HeadReaderTest, AHeadLargerThanTheLimitIs431NamingIt) {
  HeadLimits limits;
  limits.max_head_bytes = 16384;
  std::string input = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 4; ++i)
    input += "X-" + std::to_string(i) + ": " + std::string(5000, 'v') + "\r\n";
  input += "\r\n";
  auto outcome = ScanAll(input, limits);
  ASSERT_NE(RefusalOf(outcome), nullptr);
  EXPECT_EQ(RefusalOf(outcome)->status, 431);
  EXPECT_EQ(RefusalOf(outcome)->limit, "server.max_header_bytes");
  EXPECT_NE(RefusalOf(outcome)->message.find("16384"), std::string::npos);
}

TEST(SkipLeadingBlankLinesTest, SkipsCrlfAndLf) {
  EXPECT_EQ(SkipLeadingBlankLines("\r\n\nGET"), 3u);
  EXPECT_EQ(SkipLeadingBlankLines("GET"), 0u);
  EXPECT_EQ(SkipLeadingBlankLines("\r"), 0u);  // maybe the start of a CRLF: wait
}

std::variant<RequestHead, Refusal> Parse(const std::string& head, HeadLimits limits = {}) {
  return ParseRequestHead(head, limits);
}

int StatusOf(const std::variant<RequestHead, Refusal>& parsed) {
  auto* refusal = std::get_if<Refusal>(&parsed);
  return refusal == nullptr ? 0 : refusal->status;
}

TEST(ParseRequestHeadTest, ParsesTheRequestLineHeadersAndFraming) {
  auto parsed = Parse(
      "POST /mcp?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 12\r\n"
      "Expect: 100-continue\r\nX-Empty:\r\n\r\n");
  ASSERT_TRUE(std::holds_alternative<RequestHead>(parsed));
  const auto& head = std::get<RequestHead>(parsed);
  EXPECT_EQ(head.method, "POST");
  EXPECT_EQ(head.target, "/mcp?x=1");
  EXPECT_EQ(head.version, "HTTP/1.1");
  EXPECT_EQ(head.content_length, 12);
  EXPECT_TRUE(head.has_content_length);
  EXPECT_TRUE(head.expect_continue);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_EQ(head.Header("host").value_or(""), "localhost");
  EXPECT_EQ(head.Header("x-empty").value_or("absent"), "");
}

TEST(ParseRequestHeadTest, KeepAliveFollowsTheVersionAndConnectionHeader) {
  auto close = Parse("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n");
  EXPECT_FALSE(std::get<RequestHead>(close).keep_alive);
  auto old = Parse("GET / HTTP/1.0\r\n\r\n");
  EXPECT_FALSE(std::get<RequestHead>(old).keep_alive);
  auto old_keep = Parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  EXPECT_TRUE(std::get<RequestHead>(old_keep).keep_alive);
}

TEST(ParseRequestHeadTest, RefusesWhatCouldBeReadTwoWays) {
  EXPECT_EQ(StatusOf(Parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")), 411);
  EXPECT_EQ(StatusOf(Parse("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")),
            400);
  EXPECT_EQ(StatusOf(Parse("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n")),
            0);
  EXPECT_EQ(StatusOf(Parse("POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Parse("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n")),
            400);
  EXPECT_EQ(StatusOf(Parse("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Parse("GET / HTTP/1.1\r\nBad Name: a\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Parse("GET / HTTP/1.1\r\nNoColon\r\n\r\n")), 400);
  constexpr char kNul[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
  EXPECT_EQ(StatusOf(Parse(std::string(kNul, sizeof(kNul) - 1))), 400);
  EXPECT_EQ(StatusOf(Parse("GET  / HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Parse("GET http://x/ HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Parse("GET / HTTP/2.0\r\n\r\n")), 505);
}

TEST(ParseRequestHeadTest, ABodyOverTheLimitIs413NamingIt) {
  HeadLimits limits;
  limits.max_body_bytes = 1000;
  auto parsed = Parse("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", limits);
  ASSERT_EQ(StatusOf(parsed), 413);
  const auto& refusal = std::get<Refusal>(parsed);
  EXPECT_EQ(refusal.limit, "server.max_body_bytes");
  EXPECT_EQ(refusal.value, 1000);
  EXPECT_NE(refusal.message.find("1001"), std::string::npos);
  EXPECT_EQ(StatusOf(Parse("POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", limits)), 0);
}

std::variant<RequestHead, Refusal> ParseProxy(const std::string& head) {
  return ParseRequestHead(head, HeadLimits{}, TargetForms::kProxy);
}

std::string MessageOf(const std::variant<RequestHead, Refusal>& parsed) {
  auto* refusal = std::get_if<Refusal>(&parsed);
  return refusal == nullptr ? "" : refusal->message;
}

TEST(ParseRequestHeadTest, OriginFormIsTheDefaultAndHasNoProxyTarget) {
  auto parsed = Parse("GET /a?b HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(std::holds_alternative<RequestHead>(parsed));
  EXPECT_FALSE(std::get<RequestHead>(parsed).proxy.has_value());
  EXPECT_EQ(StatusOf(Parse("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n")), 400);
}

TEST(ParseRequestHeadTest, ProxyFormsConnectTakesHostAndPort) {
  auto parsed = ParseProxy("CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n");
  ASSERT_TRUE(std::holds_alternative<RequestHead>(parsed)) << MessageOf(parsed);
  const auto& target = *std::get<RequestHead>(parsed).proxy;
  EXPECT_EQ(target.host, "PyPI.org");  // normalized by the policy, not here
  EXPECT_EQ(target.port, 443);
  EXPECT_EQ(target.authority, "PyPI.org:443");
  EXPECT_EQ(target.path, "");

  auto v6 = ParseProxy("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(std::holds_alternative<RequestHead>(v6)) << MessageOf(v6);
  EXPECT_EQ(std::get<RequestHead>(v6).proxy->host, "2001:db8::1");
  EXPECT_EQ(std::get<RequestHead>(v6).proxy->authority, "[2001:db8::1]:8443");

  for (const char* bad : {"pypi.org", "pypi.org:", "pypi.org:0", "pypi.org:65536", "pypi.org:44x",
                          "[2001:db8::1]", "2001:db8::1:443", "[]:443", "user@pypi.org:443",
                          "pypi.org/x:443", "http://pypi.org:443"}) {
    EXPECT_EQ(StatusOf(ParseProxy(std::string("CONNECT ") + bad + " HTTP/1.1\r\n\r\n")), 400)
        << bad;
  }
}

TEST(ParseRequestHeadTest, ProxyFormsAbsoluteHttpUrlGivesTheOriginFormPath) {
  struct Case {
    const char* url;
    const char* host;
    int port;
    const char* path;
    const char* authority;
  };
  for (const Case& c :
       {Case{"http://example.com/a/b?c=1", "example.com", 80, "/a/b?c=1", "example.com"},
        Case{"HTTP://example.com:8080", "example.com", 8080, "/", "example.com:8080"},
        Case{"http://example.com?q", "example.com", 80, "/?q", "example.com"},
        Case{"http://example.com/p#frag", "example.com", 80, "/p", "example.com"},
        Case{"http://[2001:db8::2]:81/", "2001:db8::2", 81, "/", "[2001:db8::2]:81"},
        Case{"http://203.0.113.7/x", "203.0.113.7", 80, "/x", "203.0.113.7"}}) {
    auto parsed = ParseProxy(std::string("GET ") + c.url + " HTTP/1.1\r\nHost: other\r\n\r\n");
    ASSERT_TRUE(std::holds_alternative<RequestHead>(parsed)) << c.url << ": " << MessageOf(parsed);
    const auto& target = *std::get<RequestHead>(parsed).proxy;
    EXPECT_EQ(target.host, c.host) << c.url;
    EXPECT_EQ(target.port, c.port) << c.url;
    EXPECT_EQ(target.path, c.path) << c.url;
    EXPECT_EQ(target.authority, c.authority) << c.url;
  }
}

TEST(ParseRequestHeadTest, ProxyFormsRefuseOtherTargetsSayingWhatToSend) {
  auto origin = ParseProxy("GET /path HTTP/1.1\r\nHost: example.com\r\n\r\n");
  EXPECT_EQ(StatusOf(origin), 400);
  EXPECT_NE(MessageOf(origin).find("CONNECT host:port"), std::string::npos) << MessageOf(origin);
  auto https = ParseProxy("GET https://example.com/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(https), 400);
  EXPECT_NE(MessageOf(https).find("CONNECT host:443"), std::string::npos) << MessageOf(https);
  EXPECT_EQ(StatusOf(ParseProxy("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(ParseProxy("GET http:///x HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(ParseProxy("GET ftp://example.com/ HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(ParseProxy("GET * HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(ParseProxy("CONNECT /x HTTP/1.1\r\n\r\n")), 400);
  // The strict rules still hold in proxy form.
  EXPECT_EQ(
      StatusOf(ParseProxy("POST http://e.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")),
      411);
}

TEST(RefusalResponseTest, IsACompleteResponseWithAJsonRpcErrorNamingTheLimit) {
  Refusal refusal{431, "Request Header Fields Too Large: x", "server.max_headers", 100};
  const std::string response = RefusalResponse(refusal, "Retry-After: 1\r\n");
  EXPECT_TRUE(response.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(response.find("Retry-After: 1\r\n"), std::string::npos);
  const auto body_at = response.find("\r\n\r\n") + 4;
  const std::string body = response.substr(body_at);
  EXPECT_NE(response.find("Content-Length: " + std::to_string(body.size())), std::string::npos);
  auto json = nlohmann::json::parse(body);
  EXPECT_EQ(json["error"]["message"], refusal.message);
  EXPECT_EQ(json["error"]["data"]["limit"], "server.max_headers");
  EXPECT_EQ(json["error"]["data"]["value"], 100);
  EXPECT_EQ(json["error"]["data"]["status"], 431);
  EXPECT_TRUE(json["id"].is_null());
}

TEST(ResponseFramingTest, RewritesTheConnectionHeaderForTheClient) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\nKeep-Alive: x\r\n\r\n";
  auto kept = RewriteResponseHead(head, false, true, false);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->status, 200);
  EXPECT_EQ(kept->framing, BodyFraming::kLength);
  EXPECT_EQ(kept->content_length, 5);
  EXPECT_EQ(kept->rewritten, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
  auto closed = RewriteResponseHead(head, false, false, false);
  EXPECT_EQ(closed->rewritten, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n");
  auto old = RewriteResponseHead(head, false, true, true);
  EXPECT_NE(old->rewritten.find("Connection: keep-alive\r\n"), std::string::npos);
  // Without framing the body ends at the close, so the client's connection closes too.
  auto unframed =
      RewriteResponseHead("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false, true, false);
  EXPECT_EQ(unframed->framing, BodyFraming::kUntilClose);
  EXPECT_NE(unframed->rewritten.find("Connection: close"), std::string::npos);
  auto head_request = RewriteResponseHead(head, true, true, false);
  EXPECT_EQ(head_request->framing, BodyFraming::kNone);
  EXPECT_FALSE(RewriteResponseHead("garbage\r\n\r\n", false, true, false));
}

TEST(ResponseFramingTest, FindsTheEndOfAChunkedBodyByteByByte) {
  const std::string body = "5;ext=1\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\n";
  ChunkedBodyEnd end;
  std::size_t consumed = 0;
  for (char c : body + "NEXT") {
    consumed += end.Feed(std::string_view(&c, 1));
    if (end.done()) break;
  }
  EXPECT_TRUE(end.done());
  EXPECT_EQ(consumed, body.size());
  ChunkedBodyEnd whole;
  EXPECT_EQ(whole.Feed(body + "NEXT"), body.size());
  EXPECT_TRUE(whole.done());
}

TEST(ResponseFramingTest, ATruncatedOrBrokenChunkedBodyIsNotComplete) {
  ChunkedBodyEnd truncated;
  truncated.Feed("5\r\nhel");
  EXPECT_FALSE(truncated.done());
  EXPECT_FALSE(truncated.failed());
  ChunkedBodyEnd broken;
  broken.Feed("zz\r\n");
  EXPECT_TRUE(broken.failed());
  ChunkedBodyEnd missing_crlf;
  missing_crlf.Feed("1\r\nab");
  EXPECT_TRUE(missing_crlf.failed());
}

}  // namespace
}  // namespace sandbox::http
