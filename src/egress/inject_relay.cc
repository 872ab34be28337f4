#include "inject_relay.h"

#include <algorithm>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "answers.h"
#include "sandbox/config/network_policy.h"
#include "sandbox/http1/response_framing.h"
#include "sandbox/http1/text.h"

namespace sandbox::egress {
namespace {

// The lower-case items of a comma-separated header value (Connection, Transfer-Encoding).
std::vector<std::string> ListItems(std::string_view value) {
  std::vector<std::string> out;
  while (!value.empty()) {
    const auto comma = value.find(',');
    std::string item = http::Lower(http::Trim(value.substr(0, comma)));
    if (!item.empty()) out.push_back(std::move(item));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

bool FieldValueOk(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

std::string Hex(std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[n % 16]);
    n /= 16;
  } while (n != 0);
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether a Host header's value names `host`:`port` (the port may be left out).
bool HostMatches(std::string_view value, const std::string& host, std::uint16_t port) {
  value = http::Trim(value);
  std::string_view name = value;
  if (const auto colon = value.rfind(':'); colon != std::string_view::npos) {
    name = value.substr(0, colon);
    const std::string_view digits = value.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos ||
        std::stoi(std::string(digits)) != port) {
      return false;
    }
  }
  auto normalized = config::NormalizeHostName(name);
  return normalized.ok() && *normalized == host;
}

struct ResponseField {
  std::string_view name;
  std::string lower;
  std::string_view value;
};

}  // namespace

InjectRelay::InjectRelay(const Injection& rule, const http::HeadLimits& limits,
                         std::size_t buffer_bytes)
    : rule_(rule), limits_(limits), buffer_bytes_(buffer_bytes), reader_(limits) {}

bool InjectRelay::wants_client_input() const {
  return !client_done_ && !client_eof_ && to_upstream_.size() < buffer_bytes_ &&
         client_in_.size() < std::max(buffer_bytes_, limits_.max_head_bytes + 1);
}

bool InjectRelay::wants_upstream_input() const {
  return !upstream_done_ && !upstream_eof_ && to_client_.size() < buffer_bytes_ &&
         up_in_.size() < std::max(buffer_bytes_, kMaxInjectResponseHead + 1);
}

void InjectRelay::FromClient(std::string_view bytes) {
  if (client_done_) return;
  client_in_.append(bytes);
  PumpRequests();
}

void InjectRelay::FromUpstream(std::string_view bytes) {
  if (upstream_done_) return;
  up_in_.append(bytes);
  PumpResponses();
}

void InjectRelay::ClientEof() {
  client_eof_ = true;
  PumpRequests();
}

void InjectRelay::UpstreamEof() {
  upstream_eof_ = true;
  PumpResponses();
}

void InjectRelay::UpstreamFailed(int status, const std::string& message) {
  if (client_done_) return;
  if (response_started_) {
    Abort(message);
    return;
  }
  // The request waiting (or the next one) gets the answer; nothing more goes upstream.
  upstream_failure_ = std::make_pair(status, message);
  upstream_done_ = true;
  to_upstream_.clear();
  up_in_.clear();
  if (awaiting_response_) {
    Answer(status, message);
  } else {
    PumpRequests();
  }
}

void InjectRelay::PumpRequests() {
  while (!client_done_) {
    if (request_state_ == RequestState::kBody) {
      const std::size_t take = std::min(
          client_in_.size(), static_cast<std::size_t>(std::max<std::int64_t>(body_left_, 0)));
      if (!upstream_failure_) to_upstream_.append(client_in_, 0, take);
      client_in_.erase(0, take);
      body_left_ -= static_cast<std::int64_t>(take);
      if (body_left_ > 0) {
        if (client_eof_) Abort("the client closed before its request body was complete");
        return;
      }
      request_state_ = RequestState::kHead;
      continue;
    }
    if (awaiting_response_) return;  // one request at a time: the next waits for its turn
    if (const std::size_t blank = http::SkipLeadingBlankLines(client_in_); blank > 0) {
      client_in_.erase(0, blank);
      reader_.Reset();
    }
    if (client_in_.empty()) {
      if (client_eof_) CloseBoth();
      return;
    }
    const auto outcome = reader_.Scan(client_in_);
    if (std::holds_alternative<http::HeadReader::NeedMore>(outcome)) {
      if (client_eof_) CloseBoth();  // gone before a complete request: no one to answer
      return;
    }
    if (const auto* refusal = std::get_if<http::Refusal>(&outcome)) {
      Answer(refusal->status, refusal->message);
      return;
    }
    const std::size_t head_bytes = std::get<http::HeadReader::Complete>(outcome).head_bytes;
    const bool started = StartRequest(std::string_view{client_in_}.substr(0, head_bytes));
    if (!started) return;  // answered
    client_in_.erase(0, head_bytes);
    reader_.Reset();
    request_state_ = body_left_ > 0 ? RequestState::kBody : RequestState::kHead;
  }
}

bool InjectRelay::StartRequest(std::string_view head_bytes) {
  auto parsed = http::ParseRequestHead(head_bytes, limits_, http::TargetForms::kOrigin);
  if (const auto* refusal = std::get_if<http::Refusal>(&parsed)) {
    Answer(refusal->status, refusal->message);
    return false;
  }
  const http::RequestHead& head = std::get<http::RequestHead>(parsed);
  if (upstream_failure_) {
    Answer(upstream_failure_->first, upstream_failure_->second);
    return false;
  }
  if (head.method == "CONNECT") {
    Answer(400, "a CONNECT request inside a tunnel is not relayed");
    return false;
  }
  const std::string authority =
      rule_.port == 443 ? rule_.host : rule_.host + ":" + std::to_string(rule_.port);
  // Dropped: hop-by-hop headers and those Connection names, what the proxy sets itself, what
  // would make a response unscrubbable in pieces (Range), and the injected names.
  std::set<std::string> dropped = {"connection",     "keep-alive",     "te",    "trailer",
                                   "upgrade",        "host",           "range", "if-range",
                                   "content-length", "accept-encoding"};
  int hosts = 0;
  for (const auto& [name, value] : head.headers) {
    const std::string lower = http::Lower(name);
    if (lower == "connection") {
      for (std::string& item : ListItems(value)) dropped.insert(std::move(item));
    }
    if (lower != "host") continue;
    if (++hosts > 1) {
      Answer(400, "Bad Request: more than one Host header");
      return false;
    }
    if (!HostMatches(value, rule_.host, rule_.port)) {
      Answer(403, "this tunnel carries requests for " + authority + " only (its credentials go " +
                      "nowhere else), and the request names Host \"" +
                      std::string(http::Trim(value)) + "\"");
      return false;
    }
  }
  for (const InjectHeader& header : rule_.headers) dropped.insert(http::Lower(header.name));

  std::string out;
  out.reserve(head_bytes.size() + 256);
  out.append(head.method).append(" ").append(head.target).append(" HTTP/1.1\r\nHost: ");
  out.append(authority).append("\r\n");
  for (const auto& [name, value] : head.headers) {
    const std::string lower = http::Lower(name);
    if (dropped.contains(lower) || lower.starts_with("proxy-")) continue;
    out.append(name).append(": ").append(value).append("\r\n");
  }
  for (const InjectHeader& header : rule_.headers) {
    out.append(header.name).append(": ").append(header.value).append("\r\n");
  }
  out.append("Accept-Encoding: identity\r\n");
  if (head.has_content_length) {
    out.append("Content-Length: ").append(std::to_string(head.content_length)).append("\r\n");
  }
  if (!head.keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
  to_upstream_.append(out);

  method_ = head.method;
  client_keep_alive_ = head.keep_alive;
  client_http10_ = head.version == "HTTP/1.0";
  body_left_ = head.content_length;
  awaiting_response_ = true;
  ++requests_;
  return true;
}

void InjectRelay::PumpResponses() {
  while (!client_done_) {
    switch (response_state_) {
      case ResponseState::kHead: {
        if (up_in_.empty()) {
          if (upstream_eof_ && awaiting_response_) {
            Answer(502, rule_.host + " closed the connection without a response");
          } else if (upstream_eof_) {
            CloseBoth();  // an idle connection the upstream ended: the client's ends too
          }
          return;
        }
        if (!awaiting_response_) {
          Abort(rule_.host + " sent bytes no request asked for");
          return;
        }
        const std::size_t end = http::ResponseHeadEnd(up_in_);
        if (end == 0) {
          if (up_in_.size() > kMaxInjectResponseHead) {
            Answer(502, rule_.host + " sent a response head larger than 64 KiB");
          } else if (upstream_eof_) {
            Answer(502, rule_.host + " closed the connection inside a response head");
          }
          return;
        }
        if (!StartResponse(end)) return;
        break;
      }
      case ResponseState::kLength: {
        const std::size_t take = std::min(up_in_.size(), static_cast<std::size_t>(length_left_));
        EmitBody(std::string_view{up_in_}.substr(0, take));
        up_in_.erase(0, take);
        length_left_ -= static_cast<std::int64_t>(take);
        if (length_left_ == 0) {
          FinishBody();
          ResponseDone();
          break;
        }
        if (upstream_eof_) Abort(rule_.host + " closed the connection inside a response body");
        return;
      }
      case ResponseState::kChunked: {
        if (!DecodeChunks()) {
          Abort(rule_.host + " sent a malformed chunked response body");
          return;
        }
        if (chunk_state_ == ChunkState::kDone) {
          FinishBody();
          ResponseDone();
          break;
        }
        if (upstream_eof_) Abort(rule_.host + " closed the connection inside a response body");
        return;
      }
      case ResponseState::kUntilClose: {
        EmitBody(up_in_);
        up_in_.clear();
        if (!upstream_eof_) return;
        FinishBody();
        ResponseDone();  // not kept: the connection ends
        return;
      }
    }
  }
}

bool InjectRelay::StartResponse(std::size_t head_end) {
  const std::string_view head = std::string_view{up_in_}.substr(0, head_end);
  const auto bad = [this](const std::string& what) {
    Answer(502, rule_.host + " sent a response the proxy does not relay: " + what);
    return false;
  };
  const auto eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") ||
      (status_line[7] != '0' && status_line[7] != '1') || status_line[8] != ' ' ||
      (status_line.size() > 12 && status_line[12] != ' ') || !FieldValueOk(status_line)) {
    return bad("not an HTTP/1.x status line");
  }
  int status = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    if (status_line[i] < '0' || status_line[i] > '9') return bad("not an HTTP/1.x status line");
    status = status * 10 + (status_line[i] - '0');
  }
  if (status < 100) return bad("a status below 100");
  const bool http10 = status_line[7] == '0';

  std::vector<ResponseField> fields;
  std::string_view rest = head.substr(eol + 2);
  for (;;) {
    const auto end = rest.find("\r\n");
    if (end == 0) break;  // the blank line
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    if (line.front() == ' ' || line.front() == '\t') return bad("a folded header line");
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || !IsHttpToken(line.substr(0, colon))) {
      return bad("a malformed header line");
    }
    const std::string_view value = http::Trim(line.substr(colon + 1));
    if (!FieldValueOk(value)) return bad("a control character in a header value");
    fields.push_back({line.substr(0, colon), http::Lower(line.substr(0, colon)), value});
  }

  const bool interim = status < 200;
  if (status == 101) return bad("101 Switching Protocols (the proxy relays HTTP/1.1 only)");
  const bool no_body = interim || method_ == "HEAD" || status == 204 || status == 304;
  std::set<std::string> dropped = {"connection", "keep-alive", "proxy-connection", "upgrade"};
  std::vector<std::string> codings;
  std::optional<std::int64_t> length;
  bool upstream_keep = !http10;
  std::string content_coding;
  for (const ResponseField& field : fields) {
    if (field.lower == "connection") {
      for (std::string& item : ListItems(field.value)) {
        if (item == "close") upstream_keep = false;
        dropped.insert(std::move(item));
      }
    } else if (field.lower == "transfer-encoding") {
      for (std::string& item : ListItems(field.value)) codings.push_back(std::move(item));
    } else if (field.lower == "content-length") {
      if (field.value.empty() || field.value.size() > 18 ||
          field.value.find_first_not_of("0123456789") != std::string_view::npos) {
        return bad("a Content-Length that is not a number");
      }
      const std::int64_t value = std::stoll(std::string(field.value));
      if (length && *length != value) return bad("conflicting Content-Length headers");
      length = value;
    } else if (field.lower == "content-encoding") {
      for (std::string& item : ListItems(field.value)) {
        if (item == "identity") continue;
        // Named when it is a known coding; the upstream's own text is never quoted.
        const bool known = item == "gzip" || item == "x-gzip" || item == "deflate" ||
                           item == "br" || item == "compress" || item == "zstd";
        content_coding = known ? item : "(an unknown coding)";
      }
    }
  }
  enum class Framing { kNone, kLength, kChunked, kUntilClose } framing = Framing::kUntilClose;
  if (no_body) {
    framing = Framing::kNone;
  } else if (!codings.empty()) {
    if (codings != std::vector<std::string>{"chunked"}) {
      return bad("a transfer coding other than chunked (the proxy reads every response body " +
                 std::string("to scrub it)"));
    }
    framing = Framing::kChunked;
  } else if (length) {
    framing = *length == 0 ? Framing::kNone : Framing::kLength;
  }
  if (framing != Framing::kNone && !content_coding.empty()) {
    return bad("Content-Encoding " + content_coding +
               " (the proxy reads every response body to scrub it, so it asks for identity)");
  }
  if (!no_body) {
    // The proxy frames the body itself.
    dropped.insert("content-length");
    dropped.insert("transfer-encoding");
  }

  std::string out(status_line);
  out.append("\r\n");
  for (const ResponseField& field : fields) {
    if (dropped.contains(field.lower)) continue;
    out.append(field.name).append(": ").append(field.value).append("\r\n");
  }
  scrubber_.emplace(rule_.scrub);
  scrubber_->ScrubWhole(out);
  up_in_.erase(0, head_end);

  if (interim) {
    // 100 Continue and 103 Early Hints go on to a client that knows them (HTTP/1.1).
    if (!client_http10_) to_client_.append(out).append("\r\n");
    scrubbed_ += scrubber_->count();
    scrubber_.reset();
    return true;
  }
  chunked_out_ = framing == Framing::kChunked && !client_http10_;
  keep_ = client_keep_alive_ && upstream_keep && !client_eof_ && framing != Framing::kUntilClose &&
          (framing != Framing::kChunked || chunked_out_);
  if (framing == Framing::kLength || (framing == Framing::kNone && !no_body)) {
    out.append("Content-Length: ").append(std::to_string(length.value_or(0))).append("\r\n");
  } else if (chunked_out_) {
    out.append("Transfer-Encoding: chunked\r\n");
  }
  if (!keep_) {
    out.append("Connection: close\r\n");
  } else if (client_http10_) {
    out.append("Connection: keep-alive\r\n");
  }
  out.append("\r\n");
  to_client_.append(out);
  last_status_ = status;
  response_started_ = true;
  switch (framing) {
    case Framing::kNone:
      ResponseDone();
      break;
    case Framing::kLength:
      response_state_ = ResponseState::kLength;
      length_left_ = *length;
      break;
    case Framing::kChunked:
      response_state_ = ResponseState::kChunked;
      chunk_state_ = ChunkState::kSize;
      chunk_left_ = 0;
      chunk_digits_ = 0;
      trailer_line_ = 0;
      break;
    case Framing::kUntilClose:
      response_state_ = ResponseState::kUntilClose;
      break;
  }
  return true;
}

bool InjectRelay::DecodeChunks() {
  std::size_t i = 0;
  const std::string_view in = up_in_;
  while (i < in.size() && chunk_state_ != ChunkState::kDone) {
    const char c = in[i];
    switch (chunk_state_) {
      case ChunkState::kSize:
        if (const int digit = HexDigit(c); digit >= 0) {
          if (++chunk_digits_ > 15) return false;
          chunk_left_ = chunk_left_ * 16 + static_cast<std::uint64_t>(digit);
        } else if (chunk_digits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
          chunk_state_ = ChunkState::kExtension;
        } else if (chunk_digits_ > 0 && c == '\r') {
          chunk_state_ = ChunkState::kSizeLf;
        } else {
          return false;
        }
        ++i;
        break;
      case ChunkState::kExtension:
        if (c == '\n') return false;
        if (c == '\r') chunk_state_ = ChunkState::kSizeLf;
        ++i;
        break;
      case ChunkState::kSizeLf:
        if (c != '\n') return false;
        ++i;
        chunk_digits_ = 0;
        chunk_state_ = chunk_left_ == 0 ? ChunkState::kTrailer : ChunkState::kData;
        trailer_line_ = 0;
        break;
      case ChunkState::kData: {
        const std::size_t take =
            static_cast<std::size_t>(std::min<std::uint64_t>(chunk_left_, in.size() - i));
        EmitBody(in.substr(i, take));
        i += take;
        chunk_left_ -= take;
        if (chunk_left_ == 0) chunk_state_ = ChunkState::kDataCr;
        break;
      }
      case ChunkState::kDataCr:
        if (c != '\r') return false;
        chunk_state_ = ChunkState::kDataLf;
        ++i;
        break;
      case ChunkState::kDataLf:
        if (c != '\n') return false;
        chunk_state_ = ChunkState::kSize;
        ++i;
        break;
      case ChunkState::kTrailer:  // trailer fields are read and dropped
        ++i;
        if (c == '\n') {
          if (trailer_line_ == 0) chunk_state_ = ChunkState::kDone;
          trailer_line_ = 0;
        } else if (c != '\r') {
          ++trailer_line_;
        }
        break;
      case ChunkState::kDone:
        break;
    }
  }
  up_in_.erase(0, i);
  return true;
}

void InjectRelay::EmitBody(std::string_view data) {
  std::string released;
  scrubber_->Feed(data, released);
  if (released.empty()) return;
  if (chunked_out_) {
    to_client_.append(Hex(released.size())).append("\r\n").append(released).append("\r\n");
  } else {
    to_client_.append(released);
  }
}

void InjectRelay::FinishBody() {
  std::string rest;
  scrubber_->Finish(rest);
  if (chunked_out_) {
    if (!rest.empty())
      to_client_.append(Hex(rest.size())).append("\r\n").append(rest).append("\r\n");
    to_client_.append("0\r\n\r\n");
  } else {
    to_client_.append(rest);
  }
}

void InjectRelay::ResponseDone() {
  if (scrubber_) scrubbed_ += scrubber_->count();
  scrubber_.reset();
  awaiting_response_ = false;
  response_started_ = false;
  response_state_ = ResponseState::kHead;
  if (!keep_) {
    CloseBoth();
    return;
  }
  PumpRequests();  // a request that waited for its turn
}

void InjectRelay::Answer(int status, const std::string& message) {
  if (response_started_) {
    Abort(message);
    return;
  }
  // The proxy's own words may quote the upstream (a Content-Encoding it sent): scrubbed too,
  // for the code and for the audit line.
  Scrubber scrubber(rule_.scrub);
  std::string response = TextResponse(status, message);
  scrubber.ScrubWhole(response);
  scrubbed_ += scrubber.count();
  to_client_.append(response);
  last_status_ = status;
  if (problem_.empty()) {
    problem_ = message;
    Scrubber(rule_.scrub).ScrubWhole(problem_);
  }
  CloseBoth();
}

void InjectRelay::Abort(std::string problem) {
  if (problem_.empty()) {
    problem_ = std::move(problem);
    Scrubber(rule_.scrub).ScrubWhole(problem_);
  }
  CloseBoth();
}

void InjectRelay::CloseBoth() {
  client_done_ = true;
  upstream_done_ = true;
  awaiting_response_ = false;
  std::string().swap(client_in_);
  std::string().swap(up_in_);
}

}  // namespace sandbox::egress
