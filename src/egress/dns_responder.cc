#include "dns_responder.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "dns_answer.h"
#include "socket_address.h"

namespace sandbox::egress {
namespace {

constexpr int kPollMs = 200;  // how soon Run notices Stop

}  // namespace

Result<std::unique_ptr<DnsResponder>> DnsResponder::Bind(const std::string& host, int port,
                                                         EventSink& events,
                                                         DnsResponderOptions options) {
  auto address = ResolveListenAddress(host, port, SOCK_DGRAM);
  if (!address.ok()) return address.error();
  Fd fd(::socket(address->storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid())
    return Error(ErrorCode::kInternal, "cannot create a UDP socket: " + ErrnoText(errno));
  if (::bind(fd.get(), address->sockaddr_ptr(), address->length) != 0) {
    return Error(ErrorCode::kUnavailable,
                 "cannot bind UDP " + host + ":" + std::to_string(port) + ": " + ErrnoText(errno));
  }
  const int bound = BoundPort(fd.get());
  return std::unique_ptr<DnsResponder>(new DnsResponder(std::move(fd), bound, events, options));
}

DnsResponder::DnsResponder(Fd fd, int port, EventSink& events, DnsResponderOptions options)
    : fd_(std::move(fd)), port_(port), events_(events), options_(options) {}

void DnsResponder::Run() {
  std::array<char, 4096> buf{};
  auto window = std::chrono::steady_clock::now();
  std::uint64_t in_window = 0;
  std::uint64_t unlogged = 0;
  while (!stopping_.load()) {
    pollfd p{fd_.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, kPollMs);
    if (ready <= 0) continue;
    sockaddr_storage from{};
    socklen_t from_len = sizeof(from);
    const ssize_t n = ::recvfrom(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n <= 0) continue;
    auto answer = NullDnsAnswer(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    if (!answer) continue;  // malformed: no answer, no event
    ::sendto(fd_.get(), answer->response.data(), answer->response.size(), MSG_DONTWAIT,
             reinterpret_cast<sockaddr*>(&from), from_len);
    answered_.fetch_add(1);
    // Bounded: a flood of queries must not crowd the audit lines out of the event queue.
    const auto now = std::chrono::steady_clock::now();
    if (now - window >= std::chrono::seconds(1)) {
      if (unlogged > 0) events_.Emit({{"ev", "dns_unlogged"}, {"count", unlogged}});
      window = now;
      in_window = 0;
      unlogged = 0;
    }
    if (++in_window > options_.max_events_per_second) {
      ++unlogged;
      continue;
    }
    events_.Emit({{"ev", "dns"}, {"addr", AddressText(from)}, {"name", answer->name}});
  }
}

void DnsResponder::Stop() { stopping_.store(true); }

}  // namespace sandbox::egress
