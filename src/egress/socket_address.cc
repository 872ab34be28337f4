#include "socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>
#include <string_view>

namespace sandbox::egress {

SocketAddress ToSocketAddress(const config::IpAddress& address, std::uint16_t port) {
  SocketAddress out;
  if (address.v6) {
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    std::memcpy(&in6.sin6_addr, address.bytes.data(), 16);
    std::memcpy(&out.storage, &in6, sizeof(in6));
    out.length = sizeof(in6);
  } else {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    std::memcpy(&in.sin_addr, address.bytes.data(), 4);
    std::memcpy(&out.storage, &in, sizeof(in));
    out.length = sizeof(in);
  }
  return out;
}

config::IpAddress ToIpAddress(const sockaddr_storage& address) {
  config::IpAddress out;
  if (address.ss_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, &address, sizeof(in));
    std::memcpy(out.bytes.data(), &in.sin_addr, 4);
  } else if (address.ss_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, &address, sizeof(in6));
    constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&in6.sin6_addr);
    if (std::memcmp(bytes, kMapped, sizeof(kMapped)) == 0) {
      std::memcpy(out.bytes.data(), bytes + 12, 4);
    } else {
      out.v6 = true;
      std::memcpy(out.bytes.data(), bytes, 16);
    }
  }
  return out;
}

std::string AddressText(const sockaddr_storage& address) { return ToIpAddress(address).ToString(); }

Result<SocketAddress> ResolveListenAddress(const std::string& host, int port, int socktype) {
  if (port < 0 || port > 65535) {
    return Error(ErrorCode::kInvalidArgument, "port " + std::to_string(port) + " is not 0-65535");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc =
          ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return Error(ErrorCode::kInvalidArgument, "cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  SocketAddress out;
  std::memcpy(&out.storage, found->ai_addr, found->ai_addrlen);
  out.length = found->ai_addrlen;
  ::freeaddrinfo(found);
  return out;
}

int BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  if (bound.ss_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, &bound, sizeof(in));
    return ntohs(in.sin_port);
  }
  sockaddr_in6 in6{};
  std::memcpy(&in6, &bound, sizeof(in6));
  return ntohs(in6.sin6_port);
}

Result<std::pair<std::string, int>> ParseHostPort(const std::string& text) {
  std::string_view view = text;
  std::string host;
  std::string_view port;
  if (view.starts_with('[')) {
    const auto close = view.find("]:");
    if (close == std::string_view::npos) {
      return Error(ErrorCode::kInvalidArgument, "\"" + text + "\" is not [V6-ADDRESS]:PORT");
    }
    host = std::string(view.substr(1, close - 1));
    port = view.substr(close + 2);
  } else {
    const auto colon = view.rfind(':');
    if (colon == std::string_view::npos || view.find(':') != colon) {
      return Error(ErrorCode::kInvalidArgument, "\"" + text + "\" is not HOST:PORT");
    }
    host = std::string(view.substr(0, colon));
    port = view.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string_view::npos ||
      std::stoi(std::string(port)) > 65535) {
    return Error(ErrorCode::kInvalidArgument, "\"" + text + "\": the port must be 0-65535");
  }
  return std::make_pair(host, std::stoi(std::string(port)));
}

}  // namespace sandbox::egress
