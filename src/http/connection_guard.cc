#include "sandbox/http/connection_guard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "sandbox/core/unique_fd.h"
#include "sandbox/http/http_helpers.h"
#include "sandbox/http/server_setup.h"
#include "sandbox/http1/response_framing.h"

namespace sandbox::http {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadChunk = std::size_t{16} << 10;
constexpr std::size_t kMaxResponseHead = std::size_t{64}
                                         << 10;  // cpp-httplib's heads are far smaller
constexpr auto kSweepInterval = std::chrono::milliseconds(100);
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

std::string AddressText(const sockaddr_storage& ss) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (ss.ss_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, &ss, sizeof(in));
    ::inet_ntop(AF_INET, &in.sin_addr, text.data(), text.size());
  } else if (ss.ss_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, &ss, sizeof(in6));
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text.data(), text.size());
  }
  return text.data();
}

// A refusal with no limit behind it beyond what the message says.
Refusal Plain(int status, std::string message) {
  return Refusal{status, std::move(message), "", 0};
}

Refusal CapRefusal(const char* what, const char* limit, int value) {
  return Refusal{503,
                 std::string("Service Unavailable: ") + what + " (" + limit + " = " +
                     std::to_string(value) + "); retry later",
                 limit, value};
}

// Request headers the guard does not forward: hop-by-hop ones (it speaks its own connection
// to cpp-httplib), the framing it sets itself, and X-Forwarded-For (it sets the real one).
bool Dropped(const std::string& lower_name) {
  return lower_name == "connection" || lower_name == "keep-alive" || lower_name == "expect" ||
         lower_name == "te" || lower_name == "upgrade" || lower_name == "proxy-connection" ||
         lower_name == "content-length" || lower_name == "x-forwarded-for";
}

}  // namespace

// One client connection, and its upstream connection while a request is being served.
struct Conn;
struct Endpoint {
  Conn* conn;
  bool upstream;
};

struct Conn {
  enum class State {
    kIdle,        // no request outstanding (the next may start)
    kHead,        // a request head is arriving
    kBody,        // its body is arriving
    kForwarding,  // cpp-httplib is serving it
    kClosing,     // a last response is being sent, then the connection closes
  };

  explicit Conn(HeadLimits limits) : reader(limits) {}

  Fd client;
  std::string ip;
  State state = State::kIdle;
  Clock::time_point since;  // when the state began
  std::string in;           // the client's bytes not consumed yet
  HeadReader reader;
  RequestHead head;
  std::size_t head_bytes = 0;
  ByteBudget::Reservation body_hold;  // the body's bytes, in the in-flight budget
  std::string out;                    // bytes for the client
  std::size_t out_sent = 0;
  Clock::time_point last_progress;
  bool close_after_out = false;
  bool lingering = false;
  Clock::time_point linger_until;

  Fd up;
  bool up_connecting = false;
  std::string up_out;
  std::size_t up_sent = 0;
  std::string up_in;  // a response head being received
  bool response_started = false;
  ResponseHead response;
  std::int64_t body_remaining = 0;
  ChunkedBodyEnd chunked;

  std::uint32_t client_mask = 0;
  std::uint32_t up_mask = 0;
  Endpoint client_end{this, false};
  Endpoint up_end{this, true};
  bool dead = false;

  std::size_t out_pending() const { return out.size() - out_sent; }
};

class ConnectionGuard::Impl {
 public:
  Impl(Fd listener, Fd epoll, Fd wake, const sockaddr_un& upstream,
       const ConnectionGuardOptions& options, std::shared_ptr<spdlog::logger> logger)
      : listener_(std::move(listener)),
        epoll_(std::move(epoll)),
        wake_(std::move(wake)),
        upstream_(upstream),
        options_(options),
        logger_(std::move(logger)),
        own_budget_(options_.inflight != nullptr
                        ? nullptr
                        : std::make_unique<ByteBudget>(
                              static_cast<std::int64_t>(options_.max_buffered_bytes),
                              "max_buffered_bytes")),
        budget_(options_.inflight != nullptr ? options_.inflight : own_budget_.get()) {}

  void Run();
  void Stop() {
    stopping_.store(true);
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof(one));
  }
  ConnectionGuardStats stats() const {
    return {connections_.load(), upstreams_.load(), refused_.load()};
  }

 private:
  void Accept(Clock::time_point now);
  void RefuseAtAccept(int fd, const Refusal& refusal);
  void OnClient(Conn& c, std::uint32_t events, Clock::time_point now);
  void OnUpstream(Conn& c, std::uint32_t events, Clock::time_point now);
  void ReadClient(Conn& c, Clock::time_point now);
  void Advance(Conn& c, Clock::time_point now);
  void Refuse(Conn& c, const Refusal& refusal, Clock::time_point now,
              std::string_view extra_headers = {});
  void Forward(Conn& c, Clock::time_point now);
  void FlushClient(Conn& c, Clock::time_point now);
  void FlushUpstream(Conn& c);
  void ReadUpstream(Conn& c, Clock::time_point now);
  void RelayBody(Conn& c, std::string_view data, Clock::time_point now);
  void ResponseDone(Conn& c, bool complete, Clock::time_point now);
  void CloseUpstream(Conn& c, bool abortive);
  void Release(Conn& c);
  void Close(Conn& c);
  void UpdateInterest(Conn& c);
  void Sweep(Clock::time_point now);
  std::size_t ReadBudget(const Conn& c) const;

  Fd listener_;
  Fd epoll_;
  Fd wake_;
  sockaddr_un upstream_;  // cpp-httplib's internal socket (InternalSocket)
  ConnectionGuardOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<ByteBudget> own_budget_;  // only without options_.inflight
  ByteBudget* budget_;                      // request bodies reserve their bytes here
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connections_{0};
  std::atomic<std::size_t> upstreams_{0};
  std::atomic<std::uint64_t> refused_{0};

  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  std::unordered_map<std::string, int> per_ip_;
  std::vector<std::unique_ptr<Conn>> closed_;  // freed after the event batch that closed them
  bool accept_paused_ = false;
  Clock::time_point accept_resume_;
  int listener_tag_ = 0;
  int wake_tag_ = 0;
};

void ConnectionGuard::Impl::Run() {
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
      logger_->error("connection guard: epoll_wait failed: {}", ErrnoText(errno));
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
      } else {
        auto* end = static_cast<Endpoint*>(tag);
        if (end->conn->dead) continue;
        if (end->upstream) {
          OnUpstream(*end->conn, mask, now);
        } else {
          OnClient(*end->conn, mask, now);
        }
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
  for (auto& [ptr, conn] : conns_) all.push_back(ptr);
  for (Conn* c : all) Close(*c);
  closed_.clear();
}

void ConnectionGuard::Impl::Accept(Clock::time_point now) {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    const int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting for a moment instead of spinning on the backlog.
        logger_->warn("connection guard: accept failed ({}); pausing accepts", ErrnoText(errno));
        epoll_event ev{};
        ev.data.ptr = &listener_tag_;
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_.get(), &ev);
        accept_paused_ = true;
        accept_resume_ = now + kAcceptPause;
      }
      return;
    }
    std::string ip = AddressText(ss);
    if (static_cast<int>(conns_.size()) >= options_.max_connections) {
      RefuseAtAccept(fd, CapRefusal("the server has as many connections open as it serves",
                                    "server.max_connections", options_.max_connections));
      continue;
    }
    int& from_ip = per_ip_[ip];
    if (from_ip >= options_.max_connections_per_ip) {
      RefuseAtAccept(fd,
                     CapRefusal("this address has as many connections open as the server "
                                "serves from one address",
                                "server.max_connections_per_ip", options_.max_connections_per_ip));
      continue;
    }
    ++from_ip;
    auto conn = std::make_unique<Conn>(options_.head);
    conn->client = Fd(fd);
    conn->ip = std::move(ip);
    conn->since = now;
    conn->last_progress = now;
    Conn* c = conn.get();
    conns_.emplace(c, std::move(conn));
    connections_.store(conns_.size());
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = &c->client_end;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
    c->client_mask = ev.events;
  }
}

void ConnectionGuard::Impl::RefuseAtAccept(int fd, const Refusal& refusal) {
  // A new socket's send buffer is empty, so the short answer fits without waiting; what the
  // client already sent is read first, or the close would reset the connection.
  refused_.fetch_add(1);
  const std::string response = RefusalResponse(refusal, "Retry-After: 1\r\n");
  [[maybe_unused]] auto sent = ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  std::array<char, 4096> discard{};
  while (::recv(fd, discard.data(), discard.size(), MSG_DONTWAIT) > 0) {
  }
  ::close(fd);
}

std::size_t ConnectionGuard::Impl::ReadBudget(const Conn& c) const {
  std::size_t want = 0;
  switch (c.state) {
    case Conn::State::kIdle:
    case Conn::State::kHead:
      want = options_.head.max_head_bytes + 1;  // one byte more is refused by the reader
      break;
    case Conn::State::kBody:
      want = c.head_bytes + static_cast<std::size_t>(c.head.content_length);
      break;
    default:
      return 0;
  }
  return c.in.size() >= want ? 0 : want - c.in.size();
}

void ConnectionGuard::Impl::OnClient(Conn& c, std::uint32_t events, Clock::time_point now) {
  if ((events & EPOLLERR) != 0) {
    Close(c);
    return;
  }
  if ((events & EPOLLOUT) != 0) {
    FlushClient(c, now);
    if (c.dead) return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) != 0) ReadClient(c, now);
}

void ConnectionGuard::Impl::ReadClient(Conn& c, Clock::time_point now) {
  std::array<char, kReadChunk> buf{};
  if (c.state == Conn::State::kForwarding || (c.state == Conn::State::kClosing && !c.lingering)) {
    // Only a hang-up is watched for here: the client is gone, so is its request (cancelled).
    Close(c);
    return;
  }
  if (c.state == Conn::State::kClosing) {  // lingering: what arrives is discarded
    for (;;) {
      const ssize_t n = ::recv(c.client.get(), buf.data(), buf.size(), 0);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      Close(c);
      return;
    }
  }
  while (std::size_t budget = ReadBudget(c)) {
    const ssize_t n = ::recv(c.client.get(), buf.data(), std::min(budget, buf.size()), 0);
    if (n > 0) {
      c.in.append(buf.data(), static_cast<std::size_t>(n));
      if (static_cast<std::size_t>(n) < std::min(budget, buf.size())) break;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    Close(c);  // end of stream or error: a request not complete has no one to answer
    return;
  }
  Advance(c, now);
}

void ConnectionGuard::Impl::Advance(Conn& c, Clock::time_point now) {
  if (c.state == Conn::State::kIdle) {
    c.in.erase(0, SkipLeadingBlankLines(c.in));
    if (c.in.empty()) return;
    c.state = Conn::State::kHead;
    c.since = now;
    c.reader.Reset();
  }
  if (c.state == Conn::State::kHead) {
    auto outcome = c.reader.Scan(c.in);
    if (std::holds_alternative<HeadReader::NeedMore>(outcome)) return;
    if (auto* refusal = std::get_if<Refusal>(&outcome)) {
      Refuse(c, *refusal, now);
      return;
    }
    c.head_bytes = std::get<HeadReader::Complete>(outcome).head_bytes;
    auto parsed = ParseRequestHead(std::string_view{c.in}.substr(0, c.head_bytes), options_.head);
    if (auto* refusal = std::get_if<Refusal>(&parsed)) {
      Refuse(c, *refusal, now);
      return;
    }
    c.head = std::move(std::get<RequestHead>(parsed));
    const auto body = static_cast<std::size_t>(c.head.content_length);
    if (body > 0) {
      // Reserved before a byte of it is read; the epoll thread cannot wait, so it fits or not.
      auto hold = budget_->TryReserve(static_cast<std::int64_t>(body));
      if (!hold) {
        const bool own = own_budget_ != nullptr;
        Refuse(c,
               Refusal{
                   503,
                   "Service Unavailable: " +
                       budget_->RefusalMessage(static_cast<std::int64_t>(body), "the request body"),
                   own ? "max_buffered_bytes" : "memory.inflight_bytes", budget_->capacity()},
               now, "Retry-After: 1\r\n");
        return;
      }
      c.body_hold = std::move(*hold);
      if (c.head.expect_continue && c.in.size() < c.head_bytes + body) {
        c.out.append("HTTP/1.1 100 Continue\r\n\r\n");
        FlushClient(c, now);
        if (c.dead) return;
      }
    }
    c.state = Conn::State::kBody;
    c.since = now;
  }
  if (c.state == Conn::State::kBody) {
    if (c.in.size() < c.head_bytes + static_cast<std::size_t>(c.head.content_length)) return;
    Forward(c, now);
  }
}

void ConnectionGuard::Impl::Refuse(Conn& c, const Refusal& refusal, Clock::time_point now,
                                   std::string_view extra_headers) {
  refused_.fetch_add(1);
  logger_->debug("connection guard: {} refused {}: {}", c.ip, refusal.status, refusal.message);
  CloseUpstream(c, true);
  Release(c);
  c.in.clear();
  c.out.append(RefusalResponse(refusal, extra_headers));
  c.state = Conn::State::kClosing;
  c.since = now;
  c.close_after_out = true;
  FlushClient(c, now);
}

void ConnectionGuard::Impl::Forward(Conn& c, Clock::time_point now) {
  const RequestHead& h = c.head;
  std::string& req = c.up_out;
  req.clear();
  req.reserve(c.head_bytes + static_cast<std::size_t>(h.content_length) + 128);
  req.append(h.method).append(" ").append(h.target).append(" ").append(h.version).append("\r\n");
  for (const auto& [name, value] : h.headers) {
    if (Dropped(Lower(name))) continue;
    req.append(name).append(": ").append(value).append("\r\n");
  }
  req.append("X-Forwarded-For: ").append(c.ip).append("\r\n");
  if (h.has_content_length) {
    req.append("Content-Length: ").append(std::to_string(h.content_length)).append("\r\n");
  }
  req.append("Connection: close\r\n\r\n");
  req.append(c.in, c.head_bytes, static_cast<std::size_t>(h.content_length));
  c.in.erase(0, c.head_bytes + static_cast<std::size_t>(h.content_length));
  c.up_sent = 0;

  Fd up(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!up.valid() ||
      ::connect(up.get(), reinterpret_cast<const sockaddr*>(&upstream_), sizeof(upstream_)) != 0) {
    const int error = errno;
    // A Unix socket connects at once or not at all; EAGAIN: its backlog is full, so cpp-httplib's
    // acceptor is that far behind.
    if (error == EAGAIN) {
      Refuse(c,
             Plain(503,
                   "Service Unavailable: the server's request handler is saturated; retry "
                   "later"),
             now);
      return;
    }
    logger_->warn("connection guard: cannot connect to the internal socket {}: {}",
                  upstream_.sun_path, ErrnoText(error));
    Refuse(c, Plain(502, "Bad Gateway: the server's request handler cannot be reached"), now);
    return;
  }
  c.up = std::move(up);
  c.up_connecting = true;
  c.up_in.clear();
  c.response_started = false;
  c.response = ResponseHead{};
  c.chunked = ChunkedBodyEnd{};
  c.state = Conn::State::kForwarding;
  c.since = now;
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.ptr = &c.up_end;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.up.get(), &ev);
  c.up_mask = ev.events;
  upstreams_.fetch_add(1);
}

void ConnectionGuard::Impl::OnUpstream(Conn& c, std::uint32_t events, Clock::time_point now) {
  if (!c.up.valid()) return;
  if (c.up_connecting) {
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(c.up.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      logger_->warn("connection guard: connecting to the internal socket failed: {}",
                    ErrnoText(error));
      Refuse(c, Plain(502, "Bad Gateway: the server's request handler cannot be reached"), now);
      return;
    }
    c.up_connecting = false;
  }
  if ((events & EPOLLOUT) != 0) FlushUpstream(c);
  if (c.dead || !c.up.valid()) return;
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) != 0) ReadUpstream(c, now);
}

void ConnectionGuard::Impl::FlushUpstream(Conn& c) {
  while (c.up_sent < c.up_out.size()) {
    const ssize_t n =
        ::send(c.up.get(), c.up_out.data() + c.up_sent, c.up_out.size() - c.up_sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.up_sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    return;  // cpp-httplib closed: its response (or EOF) says what happened
  }
  std::string().swap(c.up_out);  // the guard's copy goes back now; cpp-httplib holds its own
  c.up_sent = 0;
}

void ConnectionGuard::Impl::ReadUpstream(Conn& c, Clock::time_point now) {
  std::array<char, kReadChunk> buf{};
  while (c.up.valid() && c.out_pending() < options_.max_response_buffer) {
    const ssize_t n = ::recv(c.up.get(), buf.data(), buf.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n <= 0) {
      ResponseDone(c, false, now);
      return;
    }
    std::string_view data(buf.data(), static_cast<std::size_t>(n));
    if (!c.response_started) {
      c.up_in.append(data);
      const std::size_t end = ResponseHeadEnd(c.up_in);
      if (end == 0) {
        if (c.up_in.size() > kMaxResponseHead) {
          Refuse(c, Plain(502, "Bad Gateway: the server's response head is too large"), now);
          return;
        }
        continue;
      }
      auto head =
          RewriteResponseHead(std::string_view{c.up_in}.substr(0, end), c.head.method == "HEAD",
                              c.head.keep_alive, c.head.version == "HTTP/1.0");
      if (!head) {
        Refuse(c, Plain(502, "Bad Gateway: the server's response is not HTTP/1.x"), now);
        return;
      }
      c.response = std::move(*head);
      c.response_started = true;
      c.body_remaining = c.response.content_length;
      c.out.append(c.response.rewritten);
      std::string rest = c.up_in.substr(end);
      c.up_in.clear();
      RelayBody(c, rest, now);
    } else {
      RelayBody(c, data, now);
    }
    if (c.dead || !c.up.valid()) return;
  }
  FlushClient(c, now);
}

void ConnectionGuard::Impl::RelayBody(Conn& c, std::string_view data, Clock::time_point now) {
  switch (c.response.framing) {
    case BodyFraming::kNone:
      ResponseDone(c, true, now);
      return;
    case BodyFraming::kLength: {
      const auto take = static_cast<std::size_t>(
          std::min<std::int64_t>(c.body_remaining, static_cast<std::int64_t>(data.size())));
      c.out.append(data.substr(0, take));
      c.body_remaining -= static_cast<std::int64_t>(take);
      if (c.body_remaining == 0) ResponseDone(c, true, now);
      return;
    }
    case BodyFraming::kChunked: {
      const std::size_t take = c.chunked.Feed(data);
      c.out.append(data.substr(0, take));
      if (c.chunked.done()) ResponseDone(c, true, now);
      if (c.chunked.failed()) ResponseDone(c, false, now);
      return;
    }
    case BodyFraming::kUntilClose:
      c.out.append(data);
      return;
  }
}

void ConnectionGuard::Impl::ResponseDone(Conn& c, bool complete, Clock::time_point now) {
  if (!c.response_started) {
    // cpp-httplib closed without answering (it was stopping, or refused the connection).
    Refuse(c, Plain(502, "Bad Gateway: the server closed the request without a response"), now);
    return;
  }
  // A complete response is closed at once (abortively: no TIME_WAIT left behind per request).
  CloseUpstream(c, complete);
  Release(c);  // the request is over: cpp-httplib's copy of its body is gone
  const bool keep = complete && c.head.keep_alive && c.response.framing != BodyFraming::kUntilClose;
  if (keep) {
    c.state = Conn::State::kIdle;
    c.since = now;
    c.reader.Reset();
    FlushClient(c, now);
    if (!c.dead) Advance(c, now);  // a request that was pipelined behind this one
  } else {
    c.state = Conn::State::kClosing;
    c.since = now;
    c.close_after_out = true;
    FlushClient(c, now);
  }
}

void ConnectionGuard::Impl::FlushClient(Conn& c, Clock::time_point now) {
  while (c.out_pending() > 0) {
    const ssize_t n =
        ::send(c.client.get(), c.out.data() + c.out_sent, c.out_pending(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<std::size_t>(n);
      c.last_progress = now;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    Close(c);
    return;
  }
  if (c.out_pending() == 0) {
    c.out.clear();
    c.out_sent = 0;
    if (c.close_after_out && !c.lingering) {
      ::shutdown(c.client.get(), SHUT_WR);
      c.lingering = true;
      c.linger_until = now + options_.linger;
    }
  } else if (c.out_sent > c.out.size() / 2) {
    c.out.erase(0, c.out_sent);
    c.out_sent = 0;
  }
}

void ConnectionGuard::Impl::CloseUpstream(Conn& c, bool abortive) {
  if (!c.up.valid()) return;
  if (abortive) {
    const linger off{1, 0};
    ::setsockopt(c.up.get(), SOL_SOCKET, SO_LINGER, &off, sizeof(off));
  }
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.up.get(), nullptr);
  c.up.Reset();
  c.up_mask = 0;
  c.up_connecting = false;
  std::string().swap(c.up_out);
  std::string().swap(c.up_in);
  upstreams_.fetch_sub(1);
}

void ConnectionGuard::Impl::Release(Conn& c) { c.body_hold.Release(); }

void ConnectionGuard::Impl::Close(Conn& c) {
  if (c.dead) return;
  c.dead = true;
  // Abortive: the handler behind it sees its client gone at its next write or check.
  CloseUpstream(c, true);
  Release(c);
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.client.get(), nullptr);
  c.client.Reset();
  auto ip = per_ip_.find(c.ip);
  if (ip != per_ip_.end() && --ip->second <= 0) per_ip_.erase(ip);
  auto it = conns_.find(&c);
  if (it != conns_.end()) {
    closed_.push_back(std::move(it->second));
    conns_.erase(it);
  }
  connections_.store(conns_.size());
}

void ConnectionGuard::Impl::UpdateInterest(Conn& c) {
  std::uint32_t want = 0;
  switch (c.state) {
    case Conn::State::kIdle:
    case Conn::State::kHead:
    case Conn::State::kBody:
      want = EPOLLRDHUP | (ReadBudget(c) > 0 ? EPOLLIN : 0U);
      break;
    case Conn::State::kForwarding:
      want = EPOLLRDHUP;  // a hang-up cancels the request; pipelined bytes wait in the kernel
      break;
    case Conn::State::kClosing:
      want = c.lingering ? (EPOLLIN | EPOLLRDHUP) : 0U;
      break;
  }
  if (c.out_pending() > 0) want |= EPOLLOUT;
  if (want != c.client_mask) {
    epoll_event ev{};
    ev.events = want;
    ev.data.ptr = &c.client_end;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.client.get(), &ev);
    c.client_mask = want;
  }
  if (c.up.valid()) {
    std::uint32_t up = 0;
    if (c.up_connecting || c.up_sent < c.up_out.size()) up |= EPOLLOUT;
    if (!c.up_connecting && c.out_pending() < options_.max_response_buffer) up |= EPOLLIN;
    if (up != c.up_mask) {
      epoll_event ev{};
      ev.events = up;
      ev.data.ptr = &c.up_end;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.up.get(), &ev);
      c.up_mask = up;
    }
  }
}

void ConnectionGuard::Impl::Sweep(Clock::time_point now) {
  if (accept_paused_ && now >= accept_resume_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &listener_tag_;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_.get(), &ev);
    accept_paused_ = false;
  }
  std::vector<Conn*> expired;
  std::vector<Conn*> timed_out;
  for (auto& [ptr, conn] : conns_) {
    Conn& c = *conn;
    if (c.out_pending() > 0 && now - c.last_progress > options_.send_timeout) {
      expired.push_back(ptr);
      continue;
    }
    switch (c.state) {
      case Conn::State::kIdle:
        if (c.out_pending() == 0 && now - c.since > options_.idle_timeout) expired.push_back(ptr);
        break;
      case Conn::State::kHead:
        if (now - c.since > options_.head_timeout) timed_out.push_back(ptr);
        break;
      case Conn::State::kBody:
        if (now - c.since > options_.body_timeout) timed_out.push_back(ptr);
        break;
      case Conn::State::kClosing:
        if (c.lingering && now >= c.linger_until) expired.push_back(ptr);
        break;
      case Conn::State::kForwarding:
        break;
    }
  }
  for (Conn* c : expired) Close(*c);
  for (Conn* c : timed_out) {
    const bool head = c->state == Conn::State::kHead;
    const auto limit = head ? options_.head_timeout : options_.body_timeout;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(limit).count();
    Refuse(*c,
           Refusal{408,
                   std::string("Request Timeout: the request ") + (head ? "head" : "body") +
                       " did not arrive within " + std::to_string(seconds) + " s (" +
                       (head ? "server.header_timeout_s" : "server.body_timeout_s") + ")",
                   head ? "server.header_timeout_s" : "server.body_timeout_s", seconds},
           now);
    if (!c->dead) UpdateInterest(*c);
  }
}

Result<std::unique_ptr<ConnectionGuard>> ConnectionGuard::Listen(
    const std::string& host, int port, const std::string& upstream_path,
    ConnectionGuardOptions options, std::shared_ptr<spdlog::logger> logger) {
  sockaddr_un upstream{};
  upstream.sun_family = AF_UNIX;
  if (upstream_path.empty() || upstream_path.size() >= sizeof(upstream.sun_path)) {
    return Error(ErrorCode::kInvalidArgument, "the internal socket path must be 1-" +
                                                  std::to_string(sizeof(upstream.sun_path) - 1) +
                                                  " bytes: " + upstream_path);
  }
  std::memcpy(upstream.sun_path, upstream_path.data(), upstream_path.size());
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc =
          ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return Error(ErrorCode::kInvalidArgument, "cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  Fd listener;
  int last_errno = 0;
  for (addrinfo* ai = found; ai != nullptr && !listener.valid(); ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) continue;
    ListenSocketOptions(fd.get());
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      last_errno = errno;
      continue;
    }
    listener = std::move(fd);
  }
  ::freeaddrinfo(found);
  if (!listener.valid()) {
    return Error(ErrorCode::kUnavailable,
                 "cannot listen on " + host + ":" + service + ": " + ErrnoText(last_errno));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  int bound_port = 0;
  if (bound.ss_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, &bound, sizeof(in));
    bound_port = ntohs(in.sin_port);
  } else {
    sockaddr_in6 in6{};
    std::memcpy(&in6, &bound, sizeof(in6));
    bound_port = ntohs(in6.sin6_port);
  }
  Fd epoll(::epoll_create1(EPOLL_CLOEXEC));
  Fd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll.valid() || !wake.valid()) {
    return Error(ErrorCode::kInternal, "cannot create the guard's epoll: " + ErrnoText(errno));
  }
  auto impl = std::make_unique<Impl>(std::move(listener), std::move(epoll), std::move(wake),
                                     upstream, options, std::move(logger));
  return std::unique_ptr<ConnectionGuard>(new ConnectionGuard(std::move(impl), bound_port));
}

ConnectionGuard::ConnectionGuard(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}
ConnectionGuard::~ConnectionGuard() = default;

void ConnectionGuard::Run() { impl_->Run(); }
void ConnectionGuard::Stop() { impl_->Stop(); }
ConnectionGuardStats ConnectionGuard::stats() const { return impl_->stats(); }

}  // namespace sandbox::http
