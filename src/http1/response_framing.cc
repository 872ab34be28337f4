#include "sandbox/http1/response_framing.h"

#include "sandbox/http1/text.h"

namespace sandbox::http {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::size_t ResponseHeadEnd(std::string_view input) {
  auto crlf = input.find("\r\n\r\n");
  return crlf == std::string_view::npos ? 0 : crlf + 4;
}

std::optional<ResponseHead> RewriteResponseHead(std::string_view head, bool head_request,
                                                bool keep_alive, bool http10_client) {
  ResponseHead out;
  auto eol = head.find("\r\n");
  if (eol == std::string_view::npos) return std::nullopt;
  const std::string_view status_line = head.substr(0, eol);
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12) return std::nullopt;
  for (std::size_t i = 9; i < 12; ++i) {
    if (status_line[i] < '0' || status_line[i] > '9') return std::nullopt;
    out.status = out.status * 10 + (status_line[i] - '0');
  }
  std::string fields;
  bool chunked = false;
  std::optional<std::int64_t> length;
  std::string_view rest = head.substr(eol + 2);
  while (!rest.empty()) {
    auto end = rest.find("\r\n");
    if (end == std::string_view::npos || end == 0) break;
    const std::string_view field = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    const auto colon = field.find(':');
    const std::string name =
        Lower(colon == std::string_view::npos ? field : field.substr(0, colon));
    const std::string_view value =
        colon == std::string_view::npos ? std::string_view{} : Trim(field.substr(colon + 1));
    if (name == "connection" || name == "keep-alive") continue;
    if (name == "transfer-encoding" && Lower(value).find("chunked") != std::string::npos) {
      chunked = true;
    }
    if (name == "content-length" && !value.empty() &&
        value.find_first_not_of("0123456789") == std::string_view::npos && value.size() <= 18) {
      length = std::stoll(std::string(value));
    }
    fields.append(field);
    fields.append("\r\n");
  }
  if (head_request || out.status == 204 || out.status == 304 || out.status < 200) {
    out.framing = BodyFraming::kNone;
  } else if (chunked) {
    out.framing = BodyFraming::kChunked;
  } else if (length) {
    out.framing = *length == 0 ? BodyFraming::kNone : BodyFraming::kLength;
    out.content_length = *length;
  }
  const bool keep = keep_alive && out.framing != BodyFraming::kUntilClose;
  out.rewritten.reserve(head.size() + 32);
  out.rewritten.append(status_line);
  out.rewritten.append("\r\n");
  out.rewritten.append(fields);
  if (!keep) {
    out.rewritten.append("Connection: close\r\n");
  } else if (http10_client) {
    out.rewritten.append("Connection: keep-alive\r\n");
  }
  out.rewritten.append("\r\n");
  return out;
}

std::size_t ChunkedBodyEnd::Feed(std::string_view data) {
  std::size_t i = 0;
  while (i < data.size() && state_ != State::kDone && state_ != State::kFailed) {
    const char c = data[i];
    switch (state_) {
      case State::kSize: {
        const int digit = HexDigit(c);
        if (digit >= 0) {
          if (++size_digits_ > 15) {
            state_ = State::kFailed;
            break;
          }
          remaining_ = remaining_ * 16 + static_cast<std::uint64_t>(digit);
          ++i;
        } else if (size_digits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
          state_ = State::kExtension;
          ++i;
        } else if (size_digits_ > 0 && c == '\r') {
          state_ = State::kSizeLf;
          ++i;
        } else {
          state_ = State::kFailed;
        }
        break;
      }
      case State::kExtension:
        if (c == '\r') state_ = State::kSizeLf;
        ++i;
        break;
      case State::kSizeLf:
        if (c != '\n') {
          state_ = State::kFailed;
          break;
        }
        ++i;
        size_digits_ = 0;
        if (remaining_ == 0) {
          state_ = State::kTrailer;
          trailer_line_ = 0;
        } else {
          state_ = State::kData;
        }
        break;
      case State::kData: {
        const std::size_t take =
            static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, data.size() - i));
        i += take;
        remaining_ -= take;
        if (remaining_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        state_ = c == '\r' ? State::kDataLf : State::kFailed;
        if (c == '\r') ++i;
        break;
      case State::kDataLf:
        state_ = c == '\n' ? State::kSize : State::kFailed;
        if (c == '\n') ++i;
        break;
      case State::kTrailer:
        ++i;
        if (c == '\n') {
          if (trailer_line_ == 0) {
            state_ = State::kDone;
          } else {
            trailer_line_ = 0;
          }
        } else if (c != '\r') {
          ++trailer_line_;
        }
        break;
      case State::kDone:
      case State::kFailed:
        break;
    }
  }
  return i;
}

}  // namespace sandbox::http
