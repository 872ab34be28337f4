#include "upstream.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace sandbox::egress {
namespace {

class SystemUpstreamImpl final : public Upstream {
 public:
  Result<std::vector<config::IpAddress>> Resolve(const std::string& host) override {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
      return Error(ErrorCode::kUnavailable, std::string(::gai_strerror(rc)));
    }
    std::vector<config::IpAddress> out;
    for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
      if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
      sockaddr_storage storage{};
      std::memcpy(&storage, ai->ai_addr, std::min<std::size_t>(ai->ai_addrlen, sizeof(storage)));
      const config::IpAddress address = ToIpAddress(storage);
      if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
    }
    ::freeaddrinfo(found);
    if (out.empty()) return Error(ErrorCode::kUnavailable, "no IPv4 or IPv6 address");
    return out;
  }

  SocketAddress Route(const config::IpAddress& address, std::uint16_t port) override {
    return ToSocketAddress(address, port);
  }
};

}  // namespace

std::unique_ptr<Upstream> SystemUpstream() { return std::make_unique<SystemUpstreamImpl>(); }

}  // namespace sandbox::egress
