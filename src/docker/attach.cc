#include "sandbox/docker/attach.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "docker/curl_util.h"

namespace sandbox::docker {
namespace {

constexpr std::size_t kMaxHeadBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxErrorBodyBytes = std::size_t{1024} * 1024;

// Owns a file descriptor.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

enum class WaitResult { kReady, kTimeout, kWoken };

// Waits until `fd` has `events` or the wake fd is readable or the deadline passes.
Result<WaitResult> WaitFor(int fd, short events, int wake_fd, Deadline deadline) {
  for (;;) {
    auto left = Remaining(deadline);
    if (left.count() == 0) return WaitResult::kTimeout;
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    int timeout = static_cast<int>(std::min<std::int64_t>(left.count(), 60'000));
    int n = ::poll(fds, 2, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error(ErrorCode::kInternal, std::string("poll: ") + ErrnoText(errno));
    }
    if (fds[1].revents != 0) return WaitResult::kWoken;
    if (fds[0].revents != 0) return WaitResult::kReady;  // incl. POLLHUP/POLLERR: recv tells
  }
}

Error Cancelled() { return Error(ErrorCode::kCancelled, "attach stream was closed"); }

std::string HostHeader(const Endpoint& endpoint) {
  std::string_view url = endpoint.base_url;
  auto scheme = url.find("://");
  return std::string(scheme == std::string_view::npos ? url : url.substr(scheme + 3));
}

}  // namespace

struct AttachedStream::State {
  internal::CurlEasyPtr easy;
  int fd = -1;  // owned by `easy`
  UniqueFd wake;
  std::string display;  // endpoint, for errors
  bool stdin_attached = false;
  std::mutex io_mu;  // serializes curl_easy_send/curl_easy_recv on `easy`
  std::atomic<bool> closed{false};
  std::atomic<bool> stdin_closed{false};

  // Reader-side state, touched only by the reader thread (and Open before the stream exists).
  Demuxer demux;
  std::deque<StreamChunk> pending;
  bool eof = false;

  explicit State(Demuxer::Mode mode) : demux(mode) {}

  // Sends all bytes with curl_easy_send, waiting for writability up to the deadline.
  Status SendAll(std::string_view bytes, Deadline deadline) {
    while (!bytes.empty()) {
      if (closed.load()) return Cancelled();
      std::size_t sent = 0;
      CURLcode rc = CURLE_OK;
      {
        std::lock_guard<std::mutex> lock(io_mu);
        rc = curl_easy_send(easy.get(), bytes.data(), bytes.size(), &sent);
      }
      if (rc == CURLE_OK) {
        bytes.remove_prefix(sent);
        continue;
      }
      if (rc != CURLE_AGAIN) {
        return Error(ErrorCode::kUnavailable, "attach stream: sending to the Docker engine at " +
                                                  display + " failed: " + curl_easy_strerror(rc));
      }
      auto w = WaitFor(fd, POLLOUT, wake.get(), deadline);
      if (!w.ok()) return w.error();
      if (*w == WaitResult::kTimeout) {
        return Error(ErrorCode::kTimeout, "attach stream: deadline passed while sending");
      }
      if (*w == WaitResult::kWoken) return Cancelled();
    }
    return OkStatus();
  }

  // One curl_easy_recv, then waits for readability if nothing was there. Returns the bytes read
  // ("" with eof set at end of stream).
  Result<std::string> RecvSome(Deadline deadline) {
    char buf[64 * 1024];
    for (;;) {
      if (closed.load()) return Cancelled();
      std::size_t n = 0;
      CURLcode rc = CURLE_OK;
      {
        std::lock_guard<std::mutex> lock(io_mu);
        rc = curl_easy_recv(easy.get(), buf, sizeof(buf), &n);
      }
      if (rc == CURLE_OK) {
        if (n == 0) eof = true;
        return std::string(buf, n);
      }
      if (rc != CURLE_AGAIN) {
        return Error(ErrorCode::kUnavailable, "attach stream: reading from the Docker engine at " +
                                                  display + " failed: " + curl_easy_strerror(rc));
      }
      auto w = WaitFor(fd, POLLIN, wake.get(), deadline);
      if (!w.ok()) return w.error();
      if (*w == WaitResult::kTimeout) {
        return Error(ErrorCode::kTimeout, "attach stream: no output before the deadline");
      }
      if (*w == WaitResult::kWoken) return Cancelled();
    }
  }

  Status Feed(std::string_view bytes) {
    std::vector<StreamChunk> chunks;
    Status s = demux.Feed(bytes, chunks);
    for (auto& c : chunks) pending.push_back(std::move(c));
    return s;
  }
};

AttachedStream::AttachedStream(std::unique_ptr<State> state) : state_(std::move(state)) {}

AttachedStream::~AttachedStream() = default;

int AttachedStream::fd() const { return state_->fd; }

void AttachedStream::Close() {
  state_->closed.store(true);
  std::uint64_t one = 1;
  // The eventfd stays readable from now on (nobody reads it), so every waiter wakes.
  [[maybe_unused]] ssize_t n = ::write(state_->wake.get(), &one, sizeof(one));
}

Status AttachedStream::Write(std::string_view bytes, Deadline deadline) {
  if (!state_->stdin_attached) {
    return Error(ErrorCode::kInvalidArgument, "attach stream: stdin is not attached");
  }
  if (state_->stdin_closed.load()) {
    return Error(ErrorCode::kInvalidArgument, "attach stream: stdin is already closed");
  }
  return state_->SendAll(bytes, deadline);
}

Status AttachedStream::CloseStdin() {
  if (!state_->stdin_attached) {
    return Error(ErrorCode::kInvalidArgument, "attach stream: stdin is not attached");
  }
  if (state_->closed.load()) return Cancelled();
  std::lock_guard<std::mutex> lock(state_->io_mu);
  if (state_->stdin_closed.exchange(true)) return OkStatus();
  if (::shutdown(state_->fd, SHUT_WR) != 0) {
    return Error(ErrorCode::kUnavailable,
                 std::string("attach stream: closing stdin failed: ") + ErrnoText(errno));
  }
  return OkStatus();
}

Result<std::optional<StreamChunk>> AttachedStream::Read(Deadline deadline) {
  State& s = *state_;
  for (;;) {
    if (!s.pending.empty()) {
      StreamChunk c = std::move(s.pending.front());
      s.pending.pop_front();
      return std::optional<StreamChunk>(std::move(c));
    }
    if (s.closed.load()) return Cancelled();
    if (s.eof) {
      if (!s.demux.AtFrameBoundary()) {
        return Error(ErrorCode::kProtocol, "attach stream ended in the middle of a frame");
      }
      return std::optional<StreamChunk>();
    }
    auto bytes = s.RecvSome(deadline);
    if (!bytes.ok()) return bytes.error();
    SANDBOX_RETURN_IF_ERROR(s.Feed(*bytes));
  }
}

Result<CollectedOutput> AttachedStream::ReadAll(Deadline deadline, std::size_t max_bytes) {
  CollectedOutput out;
  std::size_t total = 0;
  for (;;) {
    auto chunk = Read(deadline);
    if (!chunk.ok()) return chunk.error();
    if (!chunk->has_value()) return out;
    std::string& data = (*chunk)->data;
    std::size_t keep = std::min(data.size(), max_bytes - total);
    if (keep < data.size()) out.truncated = true;
    ((*chunk)->stream == StreamKind::kStdout ? out.stdout_data : out.stderr_data)
        .append(data, 0, keep);
    total += keep;
  }
}

Result<std::unique_ptr<AttachedStream>> AttachedStream::Open(const Transport& transport,
                                                             const std::string& target,
                                                             const AttachOptions& options,
                                                             Deadline deadline) {
  const Endpoint& endpoint = transport.endpoint();
  auto state =
      std::make_unique<State>(options.tty ? Demuxer::Mode::kRaw : Demuxer::Mode::kMultiplexed);
  state->display = endpoint.display;
  state->stdin_attached = options.attach_stdin;
  state->easy.reset(curl_easy_init());
  if (!state->easy) return Error(ErrorCode::kInternal, "curl_easy_init failed");
  CURL* h = state->easy.get();
  SANDBOX_RETURN_IF_ERROR(
      internal::ConfigureHandle(h, endpoint, transport.options(), target, deadline));
  // Connect (and do the TLS handshake) only; the HTTP exchange is ours, since the connection
  // stops being HTTP once the engine hijacks it.
  curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode rc = curl_easy_perform(h);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  const std::string what = "attach " + target;
  if (rc != CURLE_OK) return internal::CurlError(rc, errbuf, what, endpoint);
  curl_socket_t sock = CURL_SOCKET_BAD;
  if (curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK || sock == CURL_SOCKET_BAD) {
    return Error(ErrorCode::kInternal, what + ": libcurl gave no socket");
  }
  state->fd = sock;
  int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return Error(ErrorCode::kInternal, std::string("eventfd: ") + ErrnoText(errno));
  state->wake.reset(wake);

  std::string request = "POST " + target + " HTTP/1.1\r\nHost: " + HostHeader(endpoint) +
                        "\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n";
  if (options.attach_stdin) request += "Connection: Upgrade\r\nUpgrade: tcp\r\n";
  request += "\r\n";
  SANDBOX_RETURN_IF_ERROR(state->SendAll(request, deadline));

  // Read the answer head; whatever follows it is already stream data.
  std::string buffer;
  std::optional<ResponseHead> head;
  while (!head) {
    auto bytes = state->RecvSome(deadline);
    if (!bytes.ok()) return bytes.error().WithContext(what);
    buffer += *bytes;
    auto parsed = ParseResponseHead(buffer);
    if (!parsed.ok()) return parsed.error().WithContext(what);
    head = std::move(*parsed);
    if (head) break;
    if (state->eof) {
      return Error(ErrorCode::kUnavailable, what + ": the Docker engine closed the connection");
    }
    if (buffer.size() > kMaxHeadBytes) {
      return Error(ErrorCode::kProtocol, what + ": answer head too long");
    }
  }
  std::string rest = buffer.substr(head->length);
  if (head->status != 101 && head->status != 200) {
    // An ordinary HTTP error answer (no such container, ...): read its body for the message.
    std::size_t want = 0;
    auto it = head->headers.find("content-length");
    if (it != head->headers.end()) {
      want =
          std::min<std::size_t>(std::strtoul(it->second.c_str(), nullptr, 10), kMaxErrorBodyBytes);
    }
    while (rest.size() < want && !state->eof) {
      auto bytes = state->RecvSome(deadline);
      if (!bytes.ok()) break;  // report the status with what we have
      rest += *bytes;
    }
    return ErrorFromResponse(head->status, rest, what);
  }
  SANDBOX_RETURN_IF_ERROR(state->Feed(rest));
  return std::unique_ptr<AttachedStream>(new AttachedStream(std::move(state)));
}

}  // namespace sandbox::docker
