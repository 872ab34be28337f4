// HTTP/1.1 between the code and a host with credentials (injection.h), in plaintext: the TLS
// of both sides is tls_intercept.h's. Requests: each head is read and parsed with http1's strict
// reader (one Content-Length, no Transfer-Encoding: a chunked request body is a 411, no obs-fold)
// and sent as the proxy's own serialization: Host set to the target (a request for another Host
// is refused: the credential goes to its host only), the hop-by-hop and Proxy-* headers, Range
// and If-Range dropped, every header of an injected name the code sent replaced by the rule's,
// "Accept-Encoding: identity" (responses must be readable to be scrubbed). Responses: the head
// is parsed, checked and written again with the proxy's own framing (Content-Length as sent,
// chunked bodies decoded and chunked again, trailers dropped), so what the code receives is
// framed exactly as the proxy read it; a body the proxy cannot read (a Content-Encoding other
// than identity, a transfer coding other than chunked) is a 502. Every secret pattern is
// scrubbed from the head and the decoded body (scrubber.h).
//
// Keep-alive: several requests per connection, one at a time (the next head is read once the
// previous response is complete; pipelined bytes wait, bounded). The connection ends when the
// client or the upstream says close, or a response is delimited by the upstream's close.
// Thread-safety: one per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "injection.h"
#include "sandbox/http1/request_head.h"
#include "scrubber.h"

namespace sandbox::egress {

// A response head the proxy reads at most (the same bound as for plain HTTP).
inline constexpr std::size_t kMaxInjectResponseHead = std::size_t{64} << 10;

class InjectRelay {
 public:
  // `rule` must outlive the relay. `buffer_bytes` bounds what waits in each direction.
  InjectRelay(const Injection& rule, const http::HeadLimits& limits, std::size_t buffer_bytes);

  // Decrypted bytes from each side, and their ends.
  void FromClient(std::string_view bytes);
  void FromUpstream(std::string_view bytes);
  void ClientEof();
  void UpstreamEof();
  // The upstream failed (its TLS did not verify, it reset): a request waiting for its response
  // is answered with `status` and `message`; the connection ends.
  void UpstreamFailed(int status, const std::string& message);

  // Bytes to encrypt for each side; the owner erases what it took from the front.
  std::string& to_upstream() { return to_upstream_; }
  std::string& to_client() { return to_client_; }
  // Nothing more will be added for the side: once its bytes are sent, close it.
  bool upstream_done() const { return upstream_done_; }
  bool client_done() const { return client_done_; }
  // Whether more input of each side is taken now (bounded buffering).
  bool wants_client_input() const;
  bool wants_upstream_input() const;

  std::uint64_t requests() const { return requests_; }
  std::uint64_t scrubbed() const { return scrubbed_ + (scrubber_ ? scrubber_->count() : 0); }
  int last_status() const { return last_status_; }
  // Why the connection ended early ("" while it did not): for the audit line.
  const std::string& problem() const { return problem_; }

 private:
  enum class RequestState { kHead, kBody };
  enum class ResponseState { kHead, kLength, kChunked, kUntilClose };
  enum class ChunkState { kSize, kExtension, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kDone };

  void PumpRequests();
  void PumpResponses();
  bool StartRequest(std::string_view head_bytes);
  bool StartResponse(std::size_t head_end);
  // Decodes chunked body bytes from the front of up_in_; false on a malformed body.
  bool DecodeChunks();
  void EmitBody(std::string_view data);
  void FinishBody();
  void ResponseDone();
  // Answers the request with the proxy's own response and ends the connection.
  void Answer(int status, const std::string& message);
  void Abort(std::string problem);
  void CloseBoth();

  const Injection& rule_;
  http::HeadLimits limits_;
  std::size_t buffer_bytes_;
  http::HeadReader reader_;

  std::string client_in_;
  std::string up_in_;
  std::string to_upstream_;
  std::string to_client_;
  bool client_eof_ = false;
  bool upstream_eof_ = false;
  bool client_done_ = false;
  bool upstream_done_ = false;

  RequestState request_state_ = RequestState::kHead;
  std::int64_t body_left_ = 0;
  bool awaiting_response_ = false;
  std::string method_;
  bool client_keep_alive_ = true;
  bool client_http10_ = false;

  ResponseState response_state_ = ResponseState::kHead;
  bool response_started_ = false;  // bytes of the final response went to the client
  bool keep_ = false;              // the connection continues after this response
  bool chunked_out_ = false;       // the body goes out chunked
  std::int64_t length_left_ = 0;
  ChunkState chunk_state_ = ChunkState::kSize;
  std::uint64_t chunk_left_ = 0;
  int chunk_digits_ = 0;
  std::size_t trailer_line_ = 0;
  std::optional<Scrubber> scrubber_;

  // Set once the upstream failed: the answer to the request waiting or the next one.
  std::optional<std::pair<int, std::string>> upstream_failure_;

  std::uint64_t requests_ = 0;
  std::uint64_t scrubbed_ = 0;
  int last_status_ = 0;
  std::string problem_;
};

}  // namespace sandbox::egress
