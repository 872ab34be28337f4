#include "sandbox/http1/request_head.h"

#include <nlohmann/json.hpp>

#include "sandbox/http1/text.h"
#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::http {
namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Field values: visible characters, spaces, tabs and obs-text; no other control character.
bool IsFieldValue(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

Refusal BadRequest(std::string message) {
  return Refusal{400, "Bad Request: " + std::move(message), "", 0};
}

Refusal Limit(int status, std::string what, const char* limit, std::size_t value) {
  return Refusal{status, std::move(what) + " (" + limit + " = " + std::to_string(value) + ")",
                 limit, static_cast<std::int64_t>(value)};
}

// Splits a head into lines without their CRLF or LF.
std::vector<std::string_view> Lines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    auto lf = head.find('\n');
    std::string_view line = head.substr(0, lf);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (lf == std::string_view::npos) break;
    head.remove_prefix(lf + 1);
  }
  return lines;
}

// Whether a comma-separated header value (Connection) lists `token`, case-insensitively.
bool ListsToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    auto comma = value.find(',');
    if (Lower(Trim(value.substr(0, comma))) == token) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// host[:port] as a request target carries it; IPv6 in brackets. Only the characters a host
// name or an address literal can have: what the policy decides is exactly what is connected to.
std::optional<ProxyTarget> ParseAuthority(std::string_view text, bool port_required,
                                          std::uint16_t default_port) {
  ProxyTarget out;
  std::string_view port_text;
  bool has_port = false;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    out.host = std::string(text.substr(1, close - 1));
    if (out.host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) {
      return std::nullopt;
    }
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
      has_port = true;
    }
  } else {
    const auto colon = text.find(':');
    out.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = text.substr(colon + 1);
      has_port = true;
    }
    if (out.host.empty() ||
        out.host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789.-_") != std::string::npos) {
      return std::nullopt;
    }
  }
  if (has_port) {
    if (port_text.empty() || port_text.size() > 5 ||
        port_text.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    const int port = std::stoi(std::string(port_text));
    if (port < 1 || port > 65535) return std::nullopt;
    out.port = static_cast<std::uint16_t>(port);
  } else {
    if (port_required) return std::nullopt;
    out.port = default_port;
  }
  const bool v6 = out.host.find(':') != std::string::npos;
  out.authority = v6 ? "[" + out.host + "]" : out.host;
  if (out.port != default_port || port_required) out.authority += ":" + std::to_string(out.port);
  return out;
}

// The proxy's target forms; the error message says what a client should send.
std::variant<ProxyTarget, Refusal> ParseProxyTarget(std::string_view method,
                                                    std::string_view target) {
  if (method == "CONNECT") {
    auto authority = ParseAuthority(target, true, 0);
    if (!authority) {
      return BadRequest("CONNECT needs a target of the form host:port ([v6-address]:port)");
    }
    return std::move(*authority);
  }
  constexpr std::string_view kHttp = "http://";
  if (target.size() >= kHttp.size() && Lower(target.substr(0, kHttp.size())) == kHttp) {
    target.remove_prefix(kHttp.size());
    const auto slash = target.find_first_of("/?#");
    const std::string_view authority_text = target.substr(0, slash);
    if (authority_text.find('@') != std::string_view::npos) {
      return BadRequest("a proxy request URL must not carry user information (user@host)");
    }
    auto authority = ParseAuthority(authority_text, false, 80);
    if (!authority) return BadRequest("the request URL's host[:port] is not valid");
    std::string path = slash == std::string_view::npos ? "/" : std::string(target.substr(slash));
    if (path.front() == '#') path = "/";
    if (path.front() == '?') path.insert(0, "/");
    const auto fragment = path.find('#');
    if (fragment != std::string::npos) path.erase(fragment);
    authority->path = std::move(path);
    return std::move(*authority);
  }
  if (Lower(target).starts_with("https://")) {
    return BadRequest(
        "this proxy does not fetch https:// URLs; send CONNECT host:443 and speak TLS through "
        "the tunnel (what clients do with https_proxy set)");
  }
  return BadRequest(
      "this is a forward proxy: send CONNECT host:port for HTTPS, or an absolute URL "
      "(GET http://host/path) for plain HTTP; set http_proxy and https_proxy to this proxy");
}

}  // namespace

std::optional<std::string_view> RequestHead::Header(std::string_view name) const {
  const std::string lower = Lower(name);
  for (const auto& [key, value] : headers) {
    if (Lower(key) == lower) return value;
  }
  return std::nullopt;
}

Refusal HeadReader::LineTooLong() const {
  // Not configurable: cpp-httplib behind the guard refuses longer lines itself.
  if (lines_ == 0) {
    return Limit(414, "URI Too Long: the request line is longer than the server accepts",
                 "max_request_line", limits_.max_request_line);
  }
  return Limit(431,
               "Request Header Fields Too Large: a header line is longer than the server "
               "accepts",
               "max_header_line", limits_.max_header_line);
}

HeadReader::Outcome HeadReader::Scan(std::string_view input) {
  for (; scanned_ < input.size(); ++scanned_) {
    if (input[scanned_] != '\n') continue;
    std::size_t length = scanned_ - line_start_;
    if (length > 0 && input[scanned_ - 1] == '\r') --length;
    const std::size_t max = lines_ == 0 ? limits_.max_request_line : limits_.max_header_line;
    if (length > max) return LineTooLong();
    if (length == 0 && lines_ > 0) {
      ++scanned_;
      if (scanned_ > limits_.max_head_bytes) break;  // refused below
      return Complete{scanned_};
    }
    ++lines_;
    line_start_ = scanned_ + 1;
    if (lines_ - 1 > limits_.max_headers) {
      return Limit(431,
                   "Request Header Fields Too Large: more header fields than the server "
                   "accepts",
                   "server.max_headers", limits_.max_headers);
    }
  }
  if (scanned_ > limits_.max_head_bytes) {
    return Limit(431,
                 "Request Header Fields Too Large: the request head is larger than the "
                 "server accepts",
                 "server.max_header_bytes", limits_.max_head_bytes);
  }
  // The line being received is already too long: refuse it before it ends.
  const std::size_t max = lines_ == 0 ? limits_.max_request_line : limits_.max_header_line;
  if (scanned_ - line_start_ > max + 1) return LineTooLong();
  return NeedMore{};
}

std::size_t SkipLeadingBlankLines(std::string_view input) {
  std::size_t at = 0;
  while (at < input.size()) {
    if (input[at] == '\n') {
      ++at;
    } else if (input[at] == '\r' && at + 1 < input.size() && input[at + 1] == '\n') {
      at += 2;
    } else {
      break;
    }
  }
  return at;
}

std::variant<RequestHead, Refusal> ParseRequestHead(std::string_view head, const HeadLimits& limits,
                                                    TargetForms forms) {
  const auto lines = Lines(head);
  if (lines.empty()) return BadRequest("empty request");
  RequestHead out;
  // request-line = method SP request-target SP HTTP-version
  const std::string_view line = lines[0];
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return BadRequest("the request line must be 'METHOD /path HTTP/1.1'");
  }
  out.method = std::string(line.substr(0, sp1));
  out.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  out.version = std::string(line.substr(sp2 + 1));
  if (!IsToken(out.method)) return BadRequest("the method is not a token");
  for (char c : out.target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return BadRequest("the request target contains a control byte");
  }
  if (forms == TargetForms::kProxy) {
    auto target = ParseProxyTarget(out.method, out.target);
    if (auto* refusal = std::get_if<Refusal>(&target)) return std::move(*refusal);
    out.proxy = std::move(std::get<ProxyTarget>(target));
  } else if (out.target.empty() || out.target.front() != '/') {
    return BadRequest("the request target must be a path starting with '/'");
  }
  if (out.version != "HTTP/1.1" && out.version != "HTTP/1.0") {
    return Refusal{505, "HTTP Version Not Supported: only HTTP/1.0 and HTTP/1.1 are served", "", 0};
  }
  std::optional<std::string_view> connection;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view field = lines[i];
    if (field.empty()) break;  // the blank line that ends the head
    if (field.front() == ' ' || field.front() == '\t') {
      return BadRequest("folded header lines (obs-fold) are not accepted");
    }
    const auto colon = field.find(':');
    if (colon == std::string_view::npos) return BadRequest("a header line has no ':'");
    const std::string_view name = field.substr(0, colon);
    const std::string_view value = Trim(field.substr(colon + 1));
    if (!IsToken(name)) return BadRequest("a header name is not a token");
    if (!IsFieldValue(value)) return BadRequest("a header value contains a control character");
    const std::string lower = Lower(name);
    if (lower == "transfer-encoding") {
      return Refusal{411,
                     "Length Required: request bodies with Transfer-Encoding are not accepted; "
                     "send the body with a Content-Length",
                     "", 0};
    }
    if (lower == "content-length") {
      if (value.empty() || value.size() > 18 ||
          value.find_first_not_of("0123456789") != std::string_view::npos) {
        return BadRequest("Content-Length must be a decimal number");
      }
      const std::int64_t length = std::stoll(std::string(value));
      if (out.has_content_length && length != out.content_length) {
        return BadRequest("conflicting Content-Length headers");
      }
      out.has_content_length = true;
      out.content_length = length;
    }
    if (lower == "connection") connection = value;
    if (lower == "expect" && Lower(value) == "100-continue") out.expect_continue = true;
    out.headers.emplace_back(std::string(name), std::string(value));
  }
  if (out.content_length > limits.max_body_bytes) {
    return Limit(413,
                 "Payload Too Large: the request body (" + std::to_string(out.content_length) +
                     " bytes) is larger than the server accepts",
                 "server.max_body_bytes", static_cast<std::size_t>(limits.max_body_bytes));
  }
  if (out.version == "HTTP/1.0") {
    out.keep_alive = connection && ListsToken(*connection, "keep-alive");
  } else {
    out.keep_alive = !(connection && ListsToken(*connection, "close"));
  }
  return out;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 416:
      return "Range Not Satisfiable";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string RefusalBody(const Refusal& refusal) {
  nlohmann::json data = {{"status", refusal.status}};
  if (!refusal.limit.empty()) {
    data["limit"] = refusal.limit;
    data["value"] = refusal.value;
  }
  return jsonrpc::DumpJson(jsonrpc::MakeError(
      nullptr, {jsonrpc::rpc_code::kServerError, refusal.message}, std::move(data)));
}

std::string RefusalResponse(const Refusal& refusal, std::string_view extra_headers) {
  const std::string body = RefusalBody(refusal);
  std::string out = "HTTP/1.1 " + std::to_string(refusal.status) + " ";
  out += ReasonPhrase(refusal.status);
  out += "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n";
  out += extra_headers;
  out += "\r\n";
  out += body;
  return out;
}

}  // namespace sandbox::http
