#include "answers.h"

#include <set>

#include "sandbox/http1/text.h"

namespace sandbox::egress {
namespace {

// The names a Connection header lists (they are hop-by-hop too, RFC 9110 7.6.1).
std::set<std::string> ConnectionOptions(const http::RequestHead& head) {
  std::set<std::string> out;
  for (const auto& [name, value] : head.headers) {
    if (http::Lower(name) != "connection") continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string token = http::Lower(http::Trim(rest.substr(0, comma)));
      if (!token.empty()) out.insert(token);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

bool Dropped(const std::string& lower, const std::set<std::string>& options) {
  return lower == "connection" || lower == "keep-alive" || lower == "te" || lower == "trailer" ||
         lower == "upgrade" || lower == "host" || lower == "content-length" ||
         lower.starts_with("proxy-") || options.contains(lower);
}

}  // namespace

std::string TextResponse(int status, std::string_view message) {
  std::string body(kAnswerPrefix);
  body.append(message).append("\n");
  std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
  out.append(http::ReasonPhrase(status));
  out.append("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ")
      .append(std::to_string(body.size()))
      .append("\r\nConnection: close\r\n\r\n")
      .append(body);
  return out;
}

std::string PolicyRefusal(std::string_view pool, std::string_view reason) {
  std::string out = "refused by the network policy of pool \"";
  out.append(pool).append("\": ").append(reason);
  return out;
}

std::string UpstreamRequestHead(const http::RequestHead& head) {
  const auto options = ConnectionOptions(head);
  std::string out;
  out.append(head.method)
      .append(" ")
      .append(head.proxy->path)
      .append(" ")
      .append(head.version)
      .append("\r\nHost: ")
      .append(head.proxy->authority)
      .append("\r\n");
  for (const auto& [name, value] : head.headers) {
    if (Dropped(http::Lower(name), options)) continue;
    out.append(name).append(": ").append(value).append("\r\n");
  }
  if (head.has_content_length) {
    out.append("Content-Length: ").append(std::to_string(head.content_length)).append("\r\n");
  }
  out.append("Connection: close\r\n\r\n");
  return out;
}

}  // namespace sandbox::egress
