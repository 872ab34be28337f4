// Reading an HTTP/1.x request head under limits, for the ConnectionGuard: the head is scanned
// as its bytes arrive (each byte once), so an oversized or endless head is refused as soon as
// it crosses a limit, before it is buffered whole; a complete head is then parsed into its
// parts. Every refusal carries the status, what was wrong and the limit's configuration name.
//
// Strict where the guard and cpp-httplib could disagree (request smuggling): one
// Content-Length, digits only; no Transfer-Encoding (chunked request bodies get 411); no
// folded header lines; header names are tokens; no control characters in values. The guard
// forwards its own serialization of the parsed head, never the raw bytes.
//
// Thread-safety: a HeadReader belongs to one connection; the free functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sandbox::http {

// cpp-httplib 0.11.4's compiled-in line limits (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH and
// CPPHTTPLIB_HEADER_MAX_LENGTH in Debian's .so): a longer line would be refused by it anyway.
inline constexpr std::size_t kHttplibMaxRequestLine = 8192;
inline constexpr std::size_t kHttplibMaxHeaderLine = 8192;

struct HeadLimits {
  std::size_t max_head_bytes = std::size_t{32} << 10;  // request line + headers + blank line (431)
  std::size_t max_headers = 100;                       // header fields (431)
  std::size_t max_request_line = kHttplibMaxRequestLine;  // 414
  std::size_t max_header_line = kHttplibMaxHeaderLine;    // one header field (431)
  std::int64_t max_body_bytes = 8LL << 20;                // Content-Length beyond it: 413
};

// What was wrong with a request, as the guard answers it.
struct Refusal {
  int status = 400;
  std::string message;     // says what was wrong and, for a limit, its value and name
  std::string limit;       // the configuration name of the limit ("server.max_headers"), or ""
  std::int64_t value = 0;  // the limit's value
};

// Which request-target forms a head may have (RFC 9112 3.2).
enum class TargetForms {
  kOrigin,  // "/path?query" only: a server (the guard)
  kProxy,   // "CONNECT host:port" (authority-form) or "http://host[:port]/path" (absolute-form)
            // for every other method: a forward proxy (the egress proxy); nothing else
};

// The destination of a proxy request (TargetForms::kProxy).
struct ProxyTarget {
  std::string host;        // as written (not normalized); an IPv6 address without brackets
  std::uint16_t port = 0;  // CONNECT: as written; http://: as written or 80
  std::string path;        // absolute-form: the origin-form to send upstream ("/" at least)
  // The authority as the upstream's Host header carries it ("[2001:db8::1]:8080"; no ":80").
  std::string authority;
};

struct RequestHead {
  std::string method;
  std::string target;                // as received: origin-form ("/mcp?x=1"), or a proxy's form
  std::optional<ProxyTarget> proxy;  // TargetForms::kProxy only
  std::string version;               // "HTTP/1.1" or "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers;  // as received, values trimmed
  std::int64_t content_length = 0;
  bool has_content_length = false;
  bool keep_alive = true;        // the client wants the connection kept after the response
  bool expect_continue = false;  // "Expect: 100-continue"

  // The value of the first header named `name` (case-insensitive), if any.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// Scans a connection's input for the end of one request head, checking the line, size and
// count limits on the way.
class HeadReader {
 public:
  struct NeedMore {};
  struct Complete {
    std::size_t head_bytes;  // the head ends there (after its blank line)
  };
  using Outcome = std::variant<NeedMore, Complete, Refusal>;

  explicit HeadReader(HeadLimits limits) : limits_(limits) {}

  // `input` holds the bytes received so far for this head (it only grows between calls);
  // only those not seen before are scanned. Leading blank lines (allowed before a request)
  // must have been removed by the caller (see SkipLeadingBlankLines).
  Outcome Scan(std::string_view input);
  // For the next request on the connection.
  void Reset() { *this = HeadReader(limits_); }
  bool started() const { return scanned_ > 0; }

 private:
  Refusal LineTooLong() const;

  HeadLimits limits_;
  std::size_t scanned_ = 0;
  std::size_t line_start_ = 0;
  std::size_t lines_ = 0;  // complete lines, the request line included
};

// How many bytes of blank lines (CRLF or LF) `input` starts with.
std::size_t SkipLeadingBlankLines(std::string_view input);

// Parses a complete head (as HeadReader delimited it) and checks its body framing. A target of
// another form than `forms` allows is a 400 whose message says what to send instead.
std::variant<RequestHead, Refusal> ParseRequestHead(std::string_view head, const HeadLimits& limits,
                                                    TargetForms forms = TargetForms::kOrigin);

// The JSON body of a refusal: a JSON-RPC error with a null id (what MCP clients parse; every
// other refusal of the server has that shape too), its data naming the status and limit.
std::string RefusalBody(const Refusal& refusal);

// A complete response to a refusal, with "Connection: close" (the guard closes afterwards)
// and `extra_headers` (each ending in CRLF).
std::string RefusalResponse(const Refusal& refusal, std::string_view extra_headers = {});

// The reason phrase of a status code the server sends.
std::string_view ReasonPhrase(int status);

}  // namespace sandbox::http
