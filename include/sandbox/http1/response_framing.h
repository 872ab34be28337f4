// A relayed HTTP/1.x response (the ConnectionGuard relays cpp-httplib's): the head is rewritten
// for the client's connection (cpp-httplib answered a "Connection: close" request; the client
// may keep its connection), and the body's end is found from its framing (Content-Length or
// chunked), so a truncated response is told apart from a complete one. A response with neither
// ends at the upstream's EOF and closes the client's connection too.
//
// Thread-safety: values owned by one connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandbox::http {

enum class BodyFraming { kNone, kLength, kChunked, kUntilClose };

struct ResponseHead {
  int status = 0;
  BodyFraming framing = BodyFraming::kUntilClose;
  std::int64_t content_length = 0;
  std::string rewritten;  // the head to send to the client, blank line included
};

// Parses a complete response head (through its blank line) and rewrites it: Connection and
// Keep-Alive headers are dropped, then "Connection: close" is added unless the client keeps
// the connection (`keep_alive`, and a framed body), or "Connection: keep-alive" for an
// HTTP/1.0 client that keeps it. `head_request`: the request was HEAD (no body follows).
// Returns nullopt for a head that is not HTTP/1.x.
std::optional<ResponseHead> RewriteResponseHead(std::string_view head, bool head_request,
                                                bool keep_alive, bool http10_client);

// Where a response head ends in `input` (after its blank line), or 0 while it has not.
std::size_t ResponseHeadEnd(std::string_view input);

// Follows a chunked body's framing to its end (the last chunk and trailer section).
class ChunkedBodyEnd {
 public:
  // Consumes bytes of the body; returns how many belong to it (fewer than given once the end
  // is reached). Sets failed() on a malformed body.
  std::size_t Feed(std::string_view data);
  bool done() const { return state_ == State::kDone; }
  bool failed() const { return state_ == State::kFailed; }

 private:
  enum class State {
    kSize,
    kExtension,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kTrailer,
    kDone,
    kFailed
  };
  State state_ = State::kSize;
  std::uint64_t remaining_ = 0;
  int size_digits_ = 0;
  std::size_t trailer_line_ = 0;  // bytes of the trailer line being read
};

}  // namespace sandbox::http
