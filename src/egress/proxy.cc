#include "proxy.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "answers.h"
#include "client_hello.h"
#include "resolver_pool.h"
#include "sandbox/core/unique_fd.h"
#include "sandbox/http1/request_head.h"
#include "sandbox/http1/response_framing.h"
#include "socket_address.h"
#include "tls_intercept.h"

namespace sandbox::egress {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadChunk = std::size_t{16} << 10;
constexpr std::size_t kMaxResponseHead = std::size_t{64} << 10;
// Addresses of one name tried before the connection is given up (getaddrinfo may list dozens).
constexpr std::size_t kMaxConnectAttempts = 8;
constexpr auto kSweepInterval = std::chrono::milliseconds(100);
constexpr char kEstablished[] = "HTTP/1.1 200 Connection established\r\n\r\n";

long long Seconds(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

// Bytes waiting to be sent one way.
struct Buffer {
  std::string data;
  std::size_t sent = 0;
  std::size_t pending() const { return data.size() - sent; }
  void Consumed(std::size_t n) {
    sent += n;
    if (sent == data.size()) {
      data.clear();
      sent = 0;
    } else if (sent > data.size() / 2) {
      data.erase(0, sent);
      sent = 0;
    }
  }
  void Clear() {
    std::string().swap(data);
    sent = 0;
  }
};

struct Conn;
struct Endpoint {
  Conn* conn;
  bool upstream;
};

struct Conn {
  enum class State {
    kHead,        // the request head is arriving
    kResolving,   // an allowed name is being resolved
    kConnecting,  // connecting to the chosen address
    kHello,       // CONNECT: the tunnel is established, its ClientHello is arriving
    kRelay,       // bytes flow both ways
    kIntercept,   // CONNECT to a host with credentials: TLS terminated, HTTP relayed
    kClosing,     // the proxy's last answer is being sent, then the connection closes
  };

  explicit Conn(const http::HeadLimits& limits) : reader(limits) {}

  std::uint64_t id = 0;
  Fd client;
  Fd up;
  config::IpAddress source;
  std::string ip;
  State state = State::kHead;
  Clock::time_point started;
  Clock::time_point since;          // when the state began
  Clock::time_point last_activity;  // the relay's last byte either way
  std::string in;                   // the client's bytes before the relay
  http::HeadReader reader;
  http::RequestHead head;
  bool connect = false;
  bool ip_target = false;
  std::string host;  // the target: a normalized name or an address
  std::uint16_t port = 0;
  std::shared_ptr<const PoolPolicy> policy;
  const Injection* injection = nullptr;     // CONNECT to a host with credentials (in *policy)
  std::unique_ptr<TlsIntercept> intercept;  // after policy: it refers to *injection
  // The allowed addresses of the target, tried in order until one connects.
  std::vector<config::IpAddress> candidates;
  std::size_t next_candidate = 0;
  std::string connect_failures;        // "203.0.113.10: Connection refused; ..."
  Clock::time_point connect_deadline;  // for every attempt together
  Clock::time_point attempt_deadline;  // for the one in progress
  Buffer to_up;
  Buffer to_client;
  std::int64_t body_left = 0;  // plain HTTP: request body bytes not yet read from the client
  bool response_started = false;
  std::string response_head;
  bool client_eof = false;
  bool up_eof = false;
  bool up_shut = false;
  bool client_shut = false;
  bool lingering = false;
  Clock::time_point linger_until;

  // The audit line.
  std::string method;
  std::string target;
  std::string sni;
  std::string upstream_address;
  std::string verdict;
  std::string reason;
  int status = 0;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::string cut;  // "bytes" or "time": cut at a limit of ProxyOptions

  std::uint32_t client_mask = 0;
  bool client_registered = false;
  std::uint32_t up_mask = 0;
  Endpoint client_end{this, false};
  Endpoint up_end{this, true};
  bool dead = false;
};

struct Lookup {
  std::uint64_t id;
  Result<std::vector<config::IpAddress>> addresses;
};

}  // namespace

class Proxy::Impl {
 public:
  Impl(Fd listener, Fd epoll, Fd wake, ProxyOptions options, PolicyTable& table, TlsSettings& tls,
       EventSink& events, std::unique_ptr<Upstream> upstream)
      : listener_(std::move(listener)),
        epoll_(std::move(epoll)),
        wake_(std::move(wake)),
        options_(options),
        limits_(HeadLimitsOf(options)),
        table_(table),
        tls_(tls),
        events_(events),
        upstream_(std::move(upstream)),
        resolver_(std::max(1, options.resolver_threads), options.max_pending_lookups) {}

  void Run();
  void Stop() {
    stopping_.store(true);
    Wake();
  }
  ProxyStats stats() const {
    const std::lock_guard lock(stats_mutex_);
    return stats_;
  }

 private:
  static http::HeadLimits HeadLimitsOf(const ProxyOptions& options) {
    http::HeadLimits limits;
    limits.max_head_bytes = options.max_head_bytes;
    limits.max_request_line = std::min(limits.max_request_line, options.max_head_bytes);
    limits.max_header_line = std::min(limits.max_header_line, options.max_head_bytes);
    limits.max_body_bytes = options.max_body_bytes;
    return limits;
  }

  void Wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof(one));
  }
  template <typename F>
  void Count(F&& change) {
    const std::lock_guard lock(stats_mutex_);
    change(stats_);
  }

  void Accept(Clock::time_point now);
  void RefuseAtAccept(Fd fd, const config::IpAddress& source, int status,
                      const std::string& message);
  void OnClient(Conn& c, std::uint32_t events, Clock::time_point now);
  void OnUpstream(Conn& c, std::uint32_t events, Clock::time_point now);
  void ReadClient(Conn& c, Clock::time_point now);
  std::size_t PreRelayBudget(const Conn& c) const;
  void Decide(Conn& c, Clock::time_point now);
  void Resolved(Lookup lookup, Clock::time_point now);
  void StartConnecting(Conn& c, std::vector<config::IpAddress> candidates, Clock::time_point now);
  void ConnectNext(Conn& c, Clock::time_point now);
  bool Connect(Conn& c, const config::IpAddress& address, Clock::time_point now);
  void ConnectFailed(Conn& c, const std::string& why, Clock::time_point now);
  void Connected(Conn& c, Clock::time_point now);
  void CheckHello(Conn& c, Clock::time_point now);
  void RefuseHello(Conn& c, std::string reason, Clock::time_point now,
                   std::uint8_t alert = kAlertAccessDenied);
  void StartIntercept(Conn& c, Clock::time_point now);
  void Intercept(Conn& c, Clock::time_point now);
  void ReadUpstream(Conn& c, Clock::time_point now);
  void FlushUpstream(Conn& c, Clock::time_point now);
  void FlushClient(Conn& c, Clock::time_point now);
  void AfterProgress(Conn& c, Clock::time_point now);
  void EnforceCaps(Conn& c, Clock::time_point now);
  void Refuse(Conn& c, int status, const std::string& message, std::string reason,
              Clock::time_point now);
  void Fail(Conn& c, int status, const std::string& message, Clock::time_point now);
  void Finish(Conn& c, const std::string& response, Clock::time_point now);
  void CloseUpstream(Conn& c);
  void Close(Conn& c, Clock::time_point now);
  void UpdateInterest(Conn& c);
  void Sweep(Clock::time_point now);
  std::string Target(const Conn& c) const;

  Fd listener_;
  Fd epoll_;
  Fd wake_;
  ProxyOptions options_;
  http::HeadLimits limits_;
  PolicyTable& table_;
  TlsSettings& tls_;
  EventSink& events_;
  std::unique_ptr<Upstream> upstream_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex stats_mutex_;
  ProxyStats stats_;

  std::mutex lookups_mutex_;
  std::vector<Lookup> lookups_;  // finished lookups for the event loop

  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, int> per_source_;
  std::vector<std::unique_ptr<Conn>> closed_;  // freed after the event batch that closed them
  std::uint64_t next_id_ = 1;
  int listener_tag_ = 0;
  int wake_tag_ = 0;

  // Last: its threads are joined first, before what their jobs touch goes.
  ResolverPool resolver_;
};

void Proxy::Impl::Run() {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &listener_tag_;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev);
  ev.data.ptr = &wake_tag_;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);

  std::array<epoll_event, 256> events{};
  auto next_sweep = Clock::now() + kSweepInterval;
  while (!stopping_.load()) {
    const int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()),
                               static_cast<int>(kSweepInterval.count()));
    if (n < 0 && errno != EINTR) {
      events_.Emit({{"ev", "error"}, {"error", "epoll_wait failed: " + ErrnoText(errno)}});
      break;
    }
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      void* tag = events[static_cast<std::size_t>(i)].data.ptr;
      const std::uint32_t mask = events[static_cast<std::size_t>(i)].events;
      if (tag == &listener_tag_) {
        Accept(now);
      } else if (tag == &wake_tag_) {
        std::uint64_t count = 0;
        [[maybe_unused]] auto r = ::read(wake_.get(), &count, sizeof(count));
        std::vector<Lookup> done;
        {
          const std::lock_guard lock(lookups_mutex_);
          done.swap(lookups_);
        }
        for (auto& lookup : done) Resolved(std::move(lookup), now);
      } else {
        auto* end = static_cast<Endpoint*>(tag);
        if (end->conn->dead) continue;
        if (end->upstream) {
          OnUpstream(*end->conn, mask, now);
        } else {
          OnClient(*end->conn, mask, now);
        }
        EnforceCaps(*end->conn, now);
        if (!end->conn->dead) UpdateInterest(*end->conn);
      }
    }
    if (now >= next_sweep) {
      Sweep(now);
      next_sweep = now + kSweepInterval;
    }
    closed_.clear();
  }
  std::vector<Conn*> all;
  all.reserve(conns_.size());
  for (auto& [id, conn] : conns_) all.push_back(conn.get());
  const auto now = Clock::now();
  for (Conn* c : all) Close(*c, now);
  closed_.clear();
}

void Proxy::Impl::Accept(Clock::time_point now) {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    Fd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                    SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors: the backlog waits for the next round
    }
    Count([](ProxyStats& s) { ++s.accepted; });
    const config::IpAddress source = ToIpAddress(ss);
    std::string ip = source.ToString();
    if (static_cast<int>(conns_.size()) >= options_.max_connections) {
      RefuseAtAccept(std::move(fd), source, 503,
                     "the proxy has as many connections open as it serves (" +
                         std::to_string(options_.max_connections) + "); retry later");
      continue;
    }
    int& from_source = per_source_[ip];
    if (from_source >= options_.max_connections_per_source) {
      RefuseAtAccept(std::move(fd), source, 429,
                     "this sandbox has as many connections open as it may (" +
                         std::to_string(options_.max_connections_per_source) +
                         "); close some and retry");
      continue;
    }
    ++from_source;
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto conn = std::make_unique<Conn>(limits_);
    Conn* c = conn.get();
    c->id = next_id_++;
    c->client = std::move(fd);
    c->source = source;
    c->ip = std::move(ip);
    c->started = c->since = c->last_activity = now;
    conns_.emplace(c->id, std::move(conn));
    Count([this](ProxyStats& s) { s.open = conns_.size(); });
    UpdateInterest(*c);
  }
}

void Proxy::Impl::RefuseAtAccept(Fd fd, const config::IpAddress& source, int status,
                                 const std::string& message) {
  // A new socket's send buffer is empty, so the short answer fits without waiting; what the
  // client already sent is read first, or the close would reset the connection.
  Count([](ProxyStats& s) { ++s.refused; });
  const std::string response = TextResponse(status, message);
  [[maybe_unused]] auto sent = ::send(fd.get(), response.data(), response.size(), MSG_NOSIGNAL);
  ::shutdown(fd.get(), SHUT_WR);
  std::array<char, 4096> discard{};
  while (::recv(fd.get(), discard.data(), discard.size(), MSG_DONTWAIT) > 0) {
  }
  const auto entry = table_.Find(source);
  events_.Emit({{"ev", "conn"},
                {"addr", source.ToString()},
                {"pool", entry ? nlohmann::json(entry->pool) : nlohmann::json(nullptr)},
                {"verdict", "refused"},
                {"reason", message},
                {"status", status},
                {"bytes_up", 0},
                {"bytes_down", 0},
                {"ms", 0}});
}

std::size_t Proxy::Impl::PreRelayBudget(const Conn& c) const {
  std::size_t want = 0;
  if (c.state == Conn::State::kHead) {
    want = options_.max_head_bytes + 1;  // one byte more is refused by the reader
  } else if (c.connect) {
    want = kMaxClientHelloBytes + 1;  // the scan refuses a larger hello
  } else {
    want = std::min(static_cast<std::size_t>(c.body_left), options_.buffer_bytes);
  }
  return c.in.size() >= want ? 0 : want - c.in.size();
}

void Proxy::Impl::OnClient(Conn& c, std::uint32_t events, Clock::time_point now) {
  if (c.state == Conn::State::kIntercept) {
    Intercept(c, now);  // a reset too: what arrived before it (a TLS alert) says why
    if (!c.dead && (events & (EPOLLERR | EPOLLHUP)) != 0) Close(c, now);
    return;
  }
  if ((events & (EPOLLERR | EPOLLHUP)) != 0) {
    Close(c, now);  // reset, or both directions shut: nothing more can be said
    return;
  }
  if ((events & EPOLLOUT) != 0) {
    FlushClient(c, now);
    if (c.dead) return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP)) != 0) ReadClient(c, now);
}

void Proxy::Impl::ReadClient(Conn& c, Clock::time_point now) {
  std::array<char, kReadChunk> buf{};
  if (c.state == Conn::State::kClosing) {  // lingering: what arrives is discarded
    for (;;) {
      const ssize_t n = ::recv(c.client.get(), buf.data(), buf.size(), 0);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      Close(c, now);
      return;
    }
  }
  if (c.state == Conn::State::kRelay) {
    while (!c.client_eof && c.to_up.pending() < options_.buffer_bytes &&
           (c.connect || c.body_left > 0)) {
      std::size_t want = std::min(buf.size(), options_.buffer_bytes - c.to_up.pending());
      if (!c.connect) want = std::min(want, static_cast<std::size_t>(c.body_left));
      const ssize_t n = ::recv(c.client.get(), buf.data(), want, 0);
      if (n > 0) {
        c.to_up.data.append(buf.data(), static_cast<std::size_t>(n));
        if (!c.connect) c.body_left -= n;
        c.last_activity = now;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      if (n < 0 || (!c.connect && c.body_left > 0)) {
        Close(c, now);  // reset, or the request body cut short: no one to answer
        return;
      }
      c.client_eof = true;
    }
    FlushUpstream(c, now);
    return;
  }
  while (std::size_t budget = PreRelayBudget(c)) {
    if (c.client_eof) break;
    const ssize_t n = ::recv(c.client.get(), buf.data(), std::min(budget, buf.size()), 0);
    if (n > 0) {
      c.in.append(buf.data(), static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n < 0) {
      Close(c, now);
      return;
    }
    c.client_eof = true;  // a half-close after the request: its answer is still wanted
  }
  if (c.state == Conn::State::kHead) {
    c.in.erase(0, http::SkipLeadingBlankLines(c.in));
    auto outcome = c.reader.Scan(c.in);
    if (std::holds_alternative<http::HeadReader::NeedMore>(outcome)) {
      if (c.client_eof) Close(c, now);  // gone before a complete request: no one to answer
      return;
    }
    if (auto* refusal = std::get_if<http::Refusal>(&outcome)) {
      Refuse(c, refusal->status, refusal->message, refusal->message, now);
      return;
    }
    const std::size_t head_bytes = std::get<http::HeadReader::Complete>(outcome).head_bytes;
    auto parsed = http::ParseRequestHead(std::string_view{c.in}.substr(0, head_bytes), limits_,
                                         http::TargetForms::kProxy);
    if (auto* refusal = std::get_if<http::Refusal>(&parsed)) {
      const auto sp = c.in.find(' ');
      c.method = c.in.substr(0, std::min<std::size_t>(sp, 32));
      Refuse(c, refusal->status, refusal->message, refusal->message, now);
      return;
    }
    c.head = std::move(std::get<http::RequestHead>(parsed));
    c.in.erase(0, head_bytes);
    Decide(c, now);
    return;
  }
  if (c.state == Conn::State::kHello) CheckHello(c, now);
}

void Proxy::Impl::Decide(Conn& c, Clock::time_point now) {
  c.method = c.head.method;
  c.target = c.head.target;
  c.connect = c.head.method == "CONNECT";
  c.host = c.head.proxy->host;
  c.port = c.head.proxy->port;
  c.policy = table_.Find(c.source);
  if (!c.policy) {
    Refuse(c, 403,
           "unknown sandbox: no pool's network policy names " + c.ip +
               " (only sandboxes of a pool with a network allowlist may use this proxy)",
           "unknown sandbox", now);
    return;
  }
  if (c.connect && c.head.content_length > 0) {
    Refuse(c, 400, "a CONNECT request has no body", "a CONNECT request with a body", now);
    return;
  }
  const config::NetworkDecision decision = config::DecideName(c.policy->policy, c.host, c.port);
  if (!decision.allowed) {
    Refuse(c, 403, PolicyRefusal(c.policy->pool, decision.reason), decision.reason, now);
    return;
  }
  c.verdict = "allowed";
  c.reason = decision.reason;
  c.body_left = c.connect ? 0 : c.head.content_length;
  if (auto address = config::ParseIpAddress(c.host); address.ok()) {
    c.ip_target = true;
    c.host = address->ToString();
    StartConnecting(c, {*address}, now);
    return;
  }
  auto name = config::NormalizeHostName(c.host);
  c.host = name.ok() ? *name : c.host;  // DecideName allowed it, so it normalizes
  if (!c.connect && HasInjectionHost(c.policy->inject, c.host)) {
    const std::string message = "credentials for " + c.host +
                                " are added over HTTPS only: use https://" + c.host +
                                "/ (a plain http:// request there is refused, so a credential "
                                "never crosses the network in clear text)";
    Refuse(c, 403, message, "plain http:// to a host with credentials", now);
    return;
  }
  if (c.connect) c.injection = FindInjection(c.policy->inject, c.host, c.port);
  if (c.injection != nullptr && !tls_.authority()) {
    Refuse(c, 503,
           "credentials are set for " + Target(c) +
               ", but the proxy has no deployment CA to speak TLS for it (control op \"ca\")",
           "no deployment CA", now);
    return;
  }
  c.state = Conn::State::kResolving;
  c.since = now;
  const std::uint64_t id = c.id;
  const std::string host = c.host;
  const bool queued = resolver_.Submit([this, id, host] {
    auto addresses = upstream_->Resolve(host);
    {
      const std::lock_guard lock(lookups_mutex_);
      lookups_.push_back(Lookup{id, std::move(addresses)});
    }
    Wake();
  });
  if (!queued) {
    Fail(c, 503, "too many name lookups are waiting; retry " + Target(c) + " later", now);
  }
}

void Proxy::Impl::Resolved(Lookup lookup, Clock::time_point now) {
  auto it = conns_.find(lookup.id);
  if (it == conns_.end() || it->second->dead || it->second->state != Conn::State::kResolving) {
    return;  // closed or timed out meanwhile
  }
  Conn& c = *it->second;
  if (!lookup.addresses.ok()) {
    Fail(c, 502, "cannot resolve " + c.host + ": " + lookup.addresses.error().message(), now);
    if (!c.dead) UpdateInterest(c);
    return;
  }
  std::string first_refusal;
  std::vector<config::IpAddress> allowed;
  for (const config::IpAddress& address : *lookup.addresses) {
    const auto decision = config::DecideAddress(c.policy->policy, address, c.port, true);
    if (decision.allowed) {
      if (allowed.size() < kMaxConnectAttempts) allowed.push_back(address);
    } else if (first_refusal.empty()) {
      first_refusal = decision.reason;
    }
  }
  if (allowed.empty()) {
    Refuse(c, 403, PolicyRefusal(c.policy->pool, first_refusal), first_refusal, now);
  } else {
    StartConnecting(c, std::move(allowed), now);
  }
  if (!c.dead) UpdateInterest(c);
}

void Proxy::Impl::StartConnecting(Conn& c, std::vector<config::IpAddress> candidates,
                                  Clock::time_point now) {
  c.candidates = std::move(candidates);
  c.next_candidate = 0;
  c.connect_deadline = now + options_.connect_timeout;
  ConnectNext(c, now);
}

// Tries the next candidate address: each attempt gets an equal share of what is left of the
// connect timeout, so one silent address does not use up the time of the others.
void Proxy::Impl::ConnectNext(Conn& c, Clock::time_point now) {
  while (c.next_candidate < c.candidates.size()) {
    const config::IpAddress address = c.candidates[c.next_candidate++];
    const auto left = c.candidates.size() - c.next_candidate + 1;
    c.attempt_deadline = now + (c.connect_deadline - now) / static_cast<int>(left);
    if (Connect(c, address, now)) return;
  }
  Fail(c, 502, "cannot connect to " + Target(c) + " (" + c.connect_failures + ")", now);
}

void Proxy::Impl::ConnectFailed(Conn& c, const std::string& why, Clock::time_point now) {
  CloseUpstream(c);
  if (!c.connect_failures.empty()) c.connect_failures += "; ";
  c.connect_failures += c.upstream_address + ": " + why;
  ConnectNext(c, now);
}

// False (the failure noted) when the connect failed at once.
bool Proxy::Impl::Connect(Conn& c, const config::IpAddress& address, Clock::time_point now) {
  c.upstream_address = address.ToString();
  const SocketAddress to = upstream_->Route(address, c.port);
  Fd up(::socket(to.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int one = 1;
  if (up.valid()) ::setsockopt(up.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (!up.valid() ||
      (::connect(up.get(), to.sockaddr_ptr(), to.length) != 0 && errno != EINPROGRESS)) {
    if (!c.connect_failures.empty()) c.connect_failures += "; ";
    c.connect_failures += c.upstream_address + ": " + ErrnoText(errno);
    return false;
  }
  c.up = std::move(up);
  c.state = Conn::State::kConnecting;
  c.since = now;
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.ptr = &c.up_end;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.up.get(), &ev);
  c.up_mask = ev.events;
  return true;
}

void Proxy::Impl::OnUpstream(Conn& c, std::uint32_t events, Clock::time_point now) {
  if (!c.up.valid()) return;
  if (c.state == Conn::State::kIntercept) {
    Intercept(c, now);
    if (!c.dead && c.up.valid() && (events & (EPOLLERR | EPOLLHUP)) != 0) {
      // Reset or gone both ways (reported whether asked or not): the end of its stream.
      if (!c.up_eof) c.intercept->UpstreamEof();
      c.up_eof = true;
      c.to_up.Clear();
      CloseUpstream(c);
      Intercept(c, now);
    }
    return;
  }
  if (c.state == Conn::State::kConnecting) {
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(c.up.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error == 0 && (events & (EPOLLERR | EPOLLHUP)) != 0) error = ECONNREFUSED;
    if (error != 0) {
      ConnectFailed(c, ErrnoText(error), now);
      return;
    }
    Connected(c, now);
    return;
  }
  if (c.state != Conn::State::kRelay) return;
  if ((events & EPOLLERR) != 0) {  // reset: what was buffered for it can no longer go
    if (!c.connect && !c.response_started) {
      Fail(c, 502, Target(c) + " reset the connection without a response", now);
    } else {
      Close(c, now);
    }
    return;
  }
  if ((events & EPOLLOUT) != 0) {
    FlushUpstream(c, now);
    if (c.dead || !c.up.valid()) return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) ReadUpstream(c, now);
}

void Proxy::Impl::Connected(Conn& c, Clock::time_point now) {
  c.since = now;
  c.last_activity = now;
  if (c.connect) {
    c.status = 200;
    c.state = Conn::State::kHello;
    c.to_client.data.append(kEstablished);
    FlushClient(c, now);
    if (!c.dead) CheckHello(c, now);
    return;
  }
  if (c.client_eof && static_cast<std::int64_t>(c.in.size()) < c.body_left) {
    c.reason += "; the client closed before its request body was complete";
    Close(c, now);
    return;
  }
  // What arrived of the body is behind the head; body_left counts what is still to come.
  c.to_up.data = UpstreamRequestHead(c.head);
  const std::size_t take = std::min(c.in.size(), static_cast<std::size_t>(c.body_left));
  c.to_up.data.append(c.in, 0, take);
  c.body_left -= static_cast<std::int64_t>(take);
  std::string().swap(c.in);
  c.state = Conn::State::kRelay;
  FlushUpstream(c, now);
}

void Proxy::Impl::CheckHello(Conn& c, Clock::time_point now) {
  const ClientHelloScan scan = ScanClientHello(c.in);
  using State = ClientHelloScan::State;
  switch (scan.state) {
    case State::kNeedMore:
      if (c.client_eof) {
        c.reason += "; the client closed the tunnel before a TLS ClientHello";
        Close(c, now);
      }
      return;
    case State::kNotTls:
      // Nothing else may cross a tunnel: no answer a client could parse, just the close.
      Count([](ProxyStats& s) { ++s.not_tls; });
      c.verdict = "refused";
      c.reason = "the tunnel carries only TLS, and the client sent something else";
      Close(c, now);
      return;
    case State::kMalformed:
      RefuseHello(c, "the TLS ClientHello is malformed", now);
      return;
    case State::kNoServerName:
      if (!c.ip_target) {
        RefuseHello(
            c,
            "the TLS ClientHello names no server (SNI), and the tunnel to " + c.host + " needs it",
            now);
        return;
      }
      break;
    case State::kServerName: {
      c.sni = scan.server_name;
      auto name = config::NormalizeHostName(scan.server_name);
      if (c.ip_target || !name.ok() || *name != c.host) {
        RefuseHello(c,
                    "the TLS server name (SNI) \"" + scan.server_name +
                        "\" is not the CONNECT target " + c.host,
                    now);
        return;
      }
      break;
    }
  }
  if (c.injection != nullptr) {
    StartIntercept(c, now);
    return;
  }
  c.to_up.data = std::move(c.in);
  c.to_up.sent = 0;
  std::string().swap(c.in);
  c.state = Conn::State::kRelay;
  c.last_activity = now;
  FlushUpstream(c, now);
}

// The hello named the host with credentials: the proxy answers it with its own TLS server.
void Proxy::Impl::StartIntercept(Conn& c, Clock::time_point now) {
  const auto authority = tls_.authority();
  auto trust = tls_.upstream_trust();
  if (!authority || !trust.ok()) {
    RefuseHello(c, !authority ? "no deployment CA" : trust.error().message(), now,
                kAlertInternalError);
    return;
  }
  auto session =
      TlsIntercept::Start(*authority, **trust, *c.injection, limits_, options_.buffer_bytes);
  if (!session.ok()) {
    RefuseHello(c, session.error().message(), now, kAlertInternalError);
    return;
  }
  Count([](ProxyStats& s) { ++s.injected; });
  c.intercept = std::move(*session);
  c.intercept->FromClient(c.in);
  std::string().swap(c.in);
  c.state = Conn::State::kIntercept;
  c.since = now;  // the handshakes get the head timeout
  c.last_activity = now;
  Intercept(c, now);
}

// Moves ciphertext between the sockets and the session until nothing moves; every step is
// bounded by the buffers (a side is read only while the session takes more).
void Proxy::Impl::Intercept(Conn& c, Clock::time_point now) {
  TlsIntercept& session = *c.intercept;
  std::array<char, kReadChunk> buf{};
  // Sends what `out` holds; the bytes sent, or -1 when the peer is gone.
  const auto send_some = [](int fd, Buffer& out) -> ssize_t {
    ssize_t total = 0;
    while (out.pending() > 0) {
      const ssize_t n = ::send(fd, out.data.data() + out.sent, out.pending(), MSG_NOSIGNAL);
      if (n > 0) {
        out.Consumed(static_cast<std::size_t>(n));
        total += n;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      return -1;
    }
    return total;
  };
  for (int round = 0; round < 16; ++round) {
    bool progress = false;
    while (!c.client_eof && session.wants_client_input()) {
      const ssize_t n = ::recv(c.client.get(), buf.data(), buf.size(), 0);
      if (n > 0) {
        session.FromClient(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        c.last_activity = now;
        progress = true;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      c.client_eof = true;  // the end, or a reset (the send below then ends the connection)
      session.ClientEof();
      progress = true;
    }
    while (c.up.valid() && !c.up_eof && session.wants_upstream_input()) {
      const ssize_t n = ::recv(c.up.get(), buf.data(), buf.size(), 0);
      if (n > 0) {
        session.FromUpstream(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        c.bytes_down += static_cast<std::uint64_t>(n);
        c.last_activity = now;
        progress = true;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      c.up_eof = true;  // the end, or a reset: the session tells the code what it can
      session.UpstreamEof();
      progress = true;
    }
    session.Pump();
    if (c.to_client.pending() < options_.buffer_bytes &&
        session.TakeForClient(c.to_client.data, options_.buffer_bytes - c.to_client.pending()) >
            0) {
      progress = true;
    }
    if (c.up.valid() && c.to_up.pending() < options_.buffer_bytes &&
        session.TakeForUpstream(c.to_up.data, options_.buffer_bytes - c.to_up.pending()) > 0) {
      progress = true;
    }
    const ssize_t to_client = send_some(c.client.get(), c.to_client);
    if (to_client < 0) {
      Close(c, now);
      return;
    }
    if (to_client > 0) {
      c.last_activity = now;
      progress = true;
    }
    if (c.up.valid()) {
      const ssize_t to_up = send_some(c.up.get(), c.to_up);
      if (to_up < 0) {
        c.to_up.Clear();
        CloseUpstream(c);
        if (!c.up_eof) session.UpstreamEof();
        c.up_eof = true;
        progress = true;
      } else if (to_up > 0) {
        c.bytes_up += static_cast<std::uint64_t>(to_up);
        c.last_activity = now;
        progress = true;
      }
    }
    if (!progress) break;
  }
  if (c.up.valid() && session.upstream_finished() && c.to_up.pending() == 0 &&
      session.upstream_pending() == 0) {
    CloseUpstream(c);
  }
  if (session.client_finished() && c.to_client.pending() == 0 && session.client_pending() == 0) {
    Close(c, now);
  }
}

void Proxy::Impl::RefuseHello(Conn& c, std::string reason, Clock::time_point now,
                              std::uint8_t alert) {
  if (alert == kAlertAccessDenied) Count([](ProxyStats& s) { ++s.sni_refused; });
  c.verdict = "refused";
  c.reason = std::move(reason);
  CloseUpstream(c);
  std::string().swap(c.in);
  c.to_client.data.append(TlsAlert(alert));
  c.state = Conn::State::kClosing;
  c.since = now;
  FlushClient(c, now);
}

void Proxy::Impl::ReadUpstream(Conn& c, Clock::time_point now) {
  std::array<char, kReadChunk> buf{};
  while (c.up.valid() && !c.up_eof && c.to_client.pending() < options_.buffer_bytes) {
    const std::size_t want = std::min(buf.size(), options_.buffer_bytes - c.to_client.pending());
    const ssize_t n = ::recv(c.up.get(), buf.data(), want, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n < 0 && c.response_started) {
      Close(c, now);  // reset mid-response: the client sees its connection end early
      return;
    }
    if (n <= 0) {
      if (!c.connect && !c.response_started) {
        Fail(c, 502, Target(c) + " closed the connection without a response", now);
        return;
      }
      c.up_eof = true;
      break;
    }
    c.bytes_down += static_cast<std::uint64_t>(n);
    c.last_activity = now;
    const std::string_view data(buf.data(), static_cast<std::size_t>(n));
    if (c.connect || c.response_started) {
      c.to_client.data.append(data);
      continue;
    }
    c.response_head.append(data);
    const std::size_t end = http::ResponseHeadEnd(c.response_head);
    if (end == 0) {
      if (c.response_head.size() > kMaxResponseHead) {
        Fail(c, 502, Target(c) + " sent a response head larger than 64 KiB", now);
        return;
      }
      continue;
    }
    // The client's connection closes after this response, and the head says so.
    auto head =
        http::RewriteResponseHead(std::string_view{c.response_head}.substr(0, end),
                                  c.head.method == "HEAD", false, c.head.version == "HTTP/1.0");
    if (!head) {
      Fail(c, 502, Target(c) + " did not answer in HTTP/1.x", now);
      return;
    }
    c.status = head->status;
    c.response_started = true;
    c.to_client.data.append(head->rewritten);
    c.to_client.data.append(c.response_head, end);
    std::string().swap(c.response_head);
  }
  if (c.up_eof && (c.up_shut || !c.connect)) CloseUpstream(c);  // nothing more to do with it
  FlushClient(c, now);
}

void Proxy::Impl::FlushUpstream(Conn& c, Clock::time_point now) {
  while (c.up.valid() && c.to_up.pending() > 0) {
    const ssize_t n =
        ::send(c.up.get(), c.to_up.data.data() + c.to_up.sent, c.to_up.pending(), MSG_NOSIGNAL);
    if (n > 0) {
      c.to_up.Consumed(static_cast<std::size_t>(n));
      c.bytes_up += static_cast<std::uint64_t>(n);
      c.last_activity = now;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    Close(c, now);  // the upstream reset: the tunnel is over
    return;
  }
  AfterProgress(c, now);
}

void Proxy::Impl::FlushClient(Conn& c, Clock::time_point now) {
  while (c.to_client.pending() > 0) {
    const ssize_t n = ::send(c.client.get(), c.to_client.data.data() + c.to_client.sent,
                             c.to_client.pending(), MSG_NOSIGNAL);
    if (n > 0) {
      c.to_client.Consumed(static_cast<std::size_t>(n));
      c.last_activity = now;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    Close(c, now);
    return;
  }
  if (c.to_client.pending() > 0) return;
  if (c.state == Conn::State::kClosing && !c.lingering) {
    ::shutdown(c.client.get(), SHUT_WR);
    c.lingering = true;
    c.linger_until = now + options_.linger;
    return;
  }
  AfterProgress(c, now);
}

// Half-closes pass through a tunnel; a plain response ends at the upstream's EOF.
void Proxy::Impl::AfterProgress(Conn& c, Clock::time_point now) {
  if (c.dead || c.state != Conn::State::kRelay) return;
  if (c.connect && c.client_eof && c.to_up.pending() == 0 && c.up.valid() && !c.up_shut) {
    ::shutdown(c.up.get(), SHUT_WR);
    c.up_shut = true;
    if (c.up_eof) CloseUpstream(c);
  }
  if (c.up_eof && c.to_client.pending() == 0) {
    if (!c.connect || (c.client_eof && c.to_up.pending() == 0)) {
      Close(c, now);
      return;
    }
    if (!c.client_shut) {
      ::shutdown(c.client.get(), SHUT_WR);
      c.client_shut = true;
    }
  }
}

// The limits of one connection's life (ProxyOptions::max_conn_bytes, max_conn_time), once it
// relays: a plain request not answered yet gets a 413 or 504 naming the limit, anything else
// is closed. The verdict stays; the audit line says "cut" and why.
void Proxy::Impl::EnforceCaps(Conn& c, Clock::time_point now) {
  if (c.dead || (c.state != Conn::State::kRelay && c.state != Conn::State::kIntercept)) return;
  std::string why;
  int status = 0;
  if (c.bytes_up + c.bytes_down > options_.max_conn_bytes) {
    c.cut = "bytes";
    why = "the connection reached the proxy's limit of " + std::to_string(options_.max_conn_bytes) +
          " bytes (--max-conn-bytes)";
    status = 413;
    Count([](ProxyStats& s) { ++s.cut_bytes; });
  } else if (now - c.started >= options_.max_conn_time) {
    c.cut = "time";
    why = "the connection reached the proxy's limit of " +
          std::to_string(options_.max_conn_time.count()) + " ms (--max-conn-time-ms)";
    status = 504;
    Count([](ProxyStats& s) { ++s.cut_time; });
  } else {
    return;
  }
  c.reason += "; " + why;
  if (c.state == Conn::State::kRelay && !c.connect && !c.response_started) {
    Finish(c, TextResponse(status, why), now);
    c.status = status;
    return;
  }
  Close(c, now);
}

void Proxy::Impl::Refuse(Conn& c, int status, const std::string& message, std::string reason,
                         Clock::time_point now) {
  c.verdict = "refused";
  c.reason = std::move(reason);
  Finish(c, TextResponse(status, message), now);
  c.status = status;
}

void Proxy::Impl::Fail(Conn& c, int status, const std::string& message, Clock::time_point now) {
  Count([](ProxyStats& s) { ++s.upstream_failed; });
  c.reason += "; " + message;
  Finish(c, TextResponse(status, message), now);
  c.status = status;
}

void Proxy::Impl::Finish(Conn& c, const std::string& response, Clock::time_point now) {
  CloseUpstream(c);
  std::string().swap(c.in);
  c.to_up.Clear();
  c.to_client.Clear();
  c.to_client.data = response;
  c.state = Conn::State::kClosing;
  c.since = now;
  FlushClient(c, now);
}

void Proxy::Impl::CloseUpstream(Conn& c) {
  if (!c.up.valid()) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.up.get(), nullptr);
  c.up.Reset();
  c.up_mask = 0;
}

void Proxy::Impl::Close(Conn& c, Clock::time_point now) {
  if (c.dead) return;
  c.dead = true;
  CloseUpstream(c);
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.client.get(), nullptr);
  c.client.Reset();
  auto source = per_source_.find(c.ip);
  if (source != per_source_.end() && --source->second <= 0) per_source_.erase(source);
  if (c.verdict == "allowed") Count([](ProxyStats& s) { ++s.allowed; });
  if (c.verdict == "refused") Count([](ProxyStats& s) { ++s.refused; });
  // A connection that never sent a request (a port probe) leaves no audit line.
  if (!c.verdict.empty()) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - c.started);
    nlohmann::json event = {
        {"ev", "conn"},
        {"addr", c.ip},
        {"pool", c.policy ? nlohmann::json(c.policy->pool) : nullptr},
        {"method", c.method},
        {"target", c.target},
        {"sni", c.sni.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.sni)},
        {"verdict", c.verdict},
        {"reason", c.reason},
        {"status", c.status},
        {"bytes_up", c.bytes_up},
        {"bytes_down", c.bytes_down},
        {"ms", ms.count()}};
    if (!c.upstream_address.empty()) event["upstream"] = c.upstream_address;
    if (!c.cut.empty()) event["cut"] = c.cut;
    if (c.intercept) {
      // Never a value: whether credentials were added, to how many requests, and how many
      // times a secret was scrubbed from the responses.
      const InjectRelay& relay = c.intercept->relay();
      if (const std::string problem = c.intercept->problem(); !problem.empty()) {
        event["reason"] = c.reason + "; " + problem;
      }
      event["injected"] = true;
      event["requests"] = relay.requests();
      event["scrubbed"] = relay.scrubbed();
      if (relay.last_status() != 0) event["last_status"] = relay.last_status();
      Count([&relay](ProxyStats& s) { s.scrubbed += relay.scrubbed(); });
    }
    events_.Emit(event);
  }
  auto it = conns_.find(c.id);
  if (it != conns_.end()) {
    closed_.push_back(std::move(it->second));
    conns_.erase(it);
  }
  Count([this](ProxyStats& s) { s.open = conns_.size(); });
}

void Proxy::Impl::UpdateInterest(Conn& c) {
  std::uint32_t want = 0;
  switch (c.state) {
    case Conn::State::kHead:
    case Conn::State::kResolving:
    case Conn::State::kConnecting:
    case Conn::State::kHello:
      if (!c.client_eof && PreRelayBudget(c) > 0) want = EPOLLIN | EPOLLRDHUP;
      break;
    case Conn::State::kRelay:
      if (!c.client_eof && (c.connect || c.body_left > 0) &&
          c.to_up.pending() < options_.buffer_bytes) {
        want = EPOLLIN | EPOLLRDHUP;
      }
      break;
    case Conn::State::kIntercept:
      if (!c.client_eof && c.intercept->wants_client_input()) want = EPOLLIN | EPOLLRDHUP;
      if (c.intercept->client_pending() > 0) want |= EPOLLOUT;  // to be taken once it is sent
      break;
    case Conn::State::kClosing:
      if (c.lingering) want = EPOLLIN | EPOLLRDHUP;
      break;
  }
  if (c.to_client.pending() > 0) want |= EPOLLOUT;
  if (!c.client_registered || want != c.client_mask) {
    epoll_event ev{};
    ev.events = want;
    ev.data.ptr = &c.client_end;
    const int op = c.client_registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    ::epoll_ctl(epoll_.get(), op, c.client.get(), &ev);
    c.client_registered = true;
    c.client_mask = want;
  }
  if (c.up.valid()) {
    std::uint32_t up = 0;
    if (c.state == Conn::State::kConnecting) {
      up = EPOLLOUT;
    } else if (c.state == Conn::State::kRelay) {
      if (!c.up_eof && c.to_client.pending() < options_.buffer_bytes) up |= EPOLLIN | EPOLLRDHUP;
      if (c.to_up.pending() > 0) up |= EPOLLOUT;
    } else if (c.state == Conn::State::kIntercept) {
      if (!c.up_eof && c.intercept->wants_upstream_input()) up |= EPOLLIN | EPOLLRDHUP;
      if (c.to_up.pending() > 0 || c.intercept->upstream_pending() > 0) up |= EPOLLOUT;
    }
    if (up != c.up_mask) {
      epoll_event ev{};
      ev.events = up;
      ev.data.ptr = &c.up_end;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.up.get(), &ev);
      c.up_mask = up;
    }
  }
}

void Proxy::Impl::Sweep(Clock::time_point now) {
  std::vector<Conn*> all;
  all.reserve(conns_.size());
  for (auto& [id, conn] : conns_) all.push_back(conn.get());
  for (Conn* c : all) {
    if (c->dead) continue;
    switch (c->state) {
      case Conn::State::kHead:
        if (now - c->since > options_.head_timeout) {
          const std::string message = "the request head did not arrive within " +
                                      std::to_string(Seconds(options_.head_timeout)) + " s";
          if (c->in.empty()) {
            Close(*c, now);  // nothing was asked: no answer, no audit line
          } else {
            Refuse(*c, 408, message, message, now);
          }
        }
        break;
      case Conn::State::kResolving:
        if (now - c->since > options_.connect_timeout) {
          Fail(*c, 504,
               "could not reach " + Target(*c) + " within " +
                   std::to_string(Seconds(options_.connect_timeout)) + " s",
               now);
        }
        break;
      case Conn::State::kConnecting:
        if (now > c->attempt_deadline && c->next_candidate < c->candidates.size()) {
          ConnectFailed(*c, "no answer in time", now);  // the next address gets its turn
        } else if (now > c->attempt_deadline) {
          Fail(*c, 504,
               "could not reach " + Target(*c) + " within " +
                   std::to_string(Seconds(options_.connect_timeout)) + " s" +
                   (c->connect_failures.empty() ? "" : " (" + c->connect_failures + ")"),
               now);
        }
        break;
      case Conn::State::kHello:
        if (now - c->since > options_.head_timeout) {
          c->reason += "; no TLS ClientHello within " +
                       std::to_string(Seconds(options_.head_timeout)) + " s";
          Close(*c, now);
        }
        break;
      case Conn::State::kIntercept:
        if (!c->intercept->handshaken() && now - c->since > options_.head_timeout) {
          c->reason += "; the TLS handshakes did not complete within " +
                       std::to_string(Seconds(options_.head_timeout)) + " s";
          Close(*c, now);
        } else if (now - c->last_activity > options_.idle_timeout) {
          c->reason += "; idle for " + std::to_string(Seconds(options_.idle_timeout)) + " s";
          Close(*c, now);
        }
        break;
      case Conn::State::kRelay:
        if (now - c->last_activity > options_.idle_timeout) {
          c->reason += "; idle for " + std::to_string(Seconds(options_.idle_timeout)) + " s";
          Close(*c, now);
        }
        break;
      case Conn::State::kClosing:
        if ((c->lingering && now >= c->linger_until) ||
            (!c->lingering && now - c->since > options_.linger)) {
          Close(*c, now);
        }
        break;
    }
    EnforceCaps(*c, now);
    if (!c->dead) UpdateInterest(*c);
  }
}

std::string Proxy::Impl::Target(const Conn& c) const {
  const bool v6 = c.host.find(':') != std::string::npos;
  return (v6 ? "[" + c.host + "]" : c.host) + ":" + std::to_string(c.port);
}

Result<std::unique_ptr<Proxy>> Proxy::Listen(const std::string& host, int port,
                                             ProxyOptions options, PolicyTable& table,
                                             TlsSettings& tls, EventSink& events,
                                             std::unique_ptr<Upstream> upstream) {
  auto address = ResolveListenAddress(host, port, SOCK_STREAM);
  if (!address.ok()) return address.error();
  Fd listener(::socket(address->storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.valid()) {
    return Error(ErrorCode::kInternal, "cannot create a socket: " + ErrnoText(errno));
  }
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listener.get(), address->sockaddr_ptr(), address->length) != 0 ||
      ::listen(listener.get(), SOMAXCONN) != 0) {
    return Error(ErrorCode::kUnavailable,
                 "cannot listen on " + host + ":" + std::to_string(port) + ": " + ErrnoText(errno));
  }
  const int bound = BoundPort(listener.get());
  Fd epoll(::epoll_create1(EPOLL_CLOEXEC));
  Fd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll.valid() || !wake.valid()) {
    return Error(ErrorCode::kInternal, "cannot create the proxy's epoll: " + ErrnoText(errno));
  }
  auto impl = std::make_unique<Impl>(std::move(listener), std::move(epoll), std::move(wake),
                                     options, table, tls, events, std::move(upstream));
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl), bound));
}

nlohmann::json StatsJson(const ProxyStats& stats) {
  return {{"accepted", stats.accepted},       {"allowed", stats.allowed},
          {"refused", stats.refused},         {"not_tls", stats.not_tls},
          {"sni_refused", stats.sni_refused}, {"upstream_failed", stats.upstream_failed},
          {"injected", stats.injected},       {"scrubbed", stats.scrubbed},
          {"cut_bytes", stats.cut_bytes},     {"cut_time", stats.cut_time}};
}

Proxy::Proxy(std::unique_ptr<Impl> impl, int port) : impl_(std::move(impl)), port_(port) {}
Proxy::~Proxy() = default;

void Proxy::Run() { impl_->Run(); }
void Proxy::Stop() { impl_->Stop(); }
ProxyStats Proxy::stats() const { return impl_->stats(); }

}  // namespace sandbox::egress
