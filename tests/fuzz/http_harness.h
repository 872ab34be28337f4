// An httplib::Server driven without a socket, for the HTTP fuzz targets: a request's raw bytes go
// through httplib's own request parsing, the pre-routing guard, routing and the project's
// handlers, and the response (content providers included, so SSE streams too) is written to
// memory. It uses httplib's protected Server::process_request with an in-memory Stream: the
// server never binds a port.
//
// The server is flagged as running (svr_sock_ holds an eventfd): httplib stops content providers
// as soon as it sees no listening socket. An exception escaping a handler is a finding (httplib
// would answer 500 with the exception text in a header and no JSON body), so it aborts.
// Thread-safety: Serve() may run on several threads at once (one per open SSE stream).
#pragma once

#include <httplib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"

namespace sandbox::fuzz {

// One connection's bytes: the request to read, the response written so far. Closing it makes
// it unwritable, as a client that went away.
class MemoryStream final : public httplib::Stream {
 public:
  explicit MemoryStream(std::string request) : in_(std::move(request)) {}

  bool is_readable() const override { return true; }
  bool is_writable() const override { return !closed_.load(); }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, in_.size() - pos_);
    in_.copy(ptr, n, pos_);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (closed_.load()) return -1;
    {
      std::lock_guard lock(mu_);
      out_.append(ptr, size);
    }
    cv_.notify_all();
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8080;
  }
  socket_t socket() const override { return INVALID_SOCKET; }

  void Close() { closed_.store(true); }
  // The server is done with this connection (wakes WaitFor).
  void Finish() {
    {
      std::lock_guard lock(mu_);
      finished_ = true;
    }
    cv_.notify_all();
  }
  std::string output() const {
    std::lock_guard lock(mu_);
    return out_;
  }
  // Waits (up to `limit`) until the output contains `needle` or the server is done with the
  // connection; returns the output.
  std::string WaitFor(std::string_view needle, std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, limit, [&] { return finished_ || out_.find(needle) != std::string::npos; });
    return out_;
  }

 private:
  std::string in_;
  std::size_t pos_ = 0;
  std::atomic<bool> closed_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string out_;
  bool finished_ = false;
};

class InMemoryServer final : public httplib::Server {
 public:
  InMemoryServer() : running_fd_(::eventfd(0, EFD_CLOEXEC)) {
    FUZZ_CHECK(running_fd_ >= 0, "eventfd");
    svr_sock_ = running_fd_;
    set_exception_handler(
        [](const httplib::Request& req, httplib::Response&, std::exception_ptr ep) {
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "exception escaped the handler of %s %s: %s\n", req.method.c_str(),
                         req.path.c_str(), e.what());
          } catch (...) {
            std::fprintf(stderr, "unknown exception escaped the handler of %s %s\n",
                         req.method.c_str(), req.path.c_str());
          }
          std::abort();
        });
  }
  ~InMemoryServer() override {
    svr_sock_ = INVALID_SOCKET;
    ::close(running_fd_);
  }
  InMemoryServer(const InMemoryServer&) = delete;
  InMemoryServer& operator=(const InMemoryServer&) = delete;

  // Serves one request on `stream`; returns when the response is complete.
  void Serve(MemoryStream& stream) {
    bool closed = false;
    process_request(stream, /*close_connection=*/true, closed, nullptr);
    stream.Finish();
  }
  std::string Serve(std::string raw) {
    MemoryStream stream(std::move(raw));
    Serve(stream);
    return stream.output();
  }

 private:
  int running_fd_;
};

// A parsed HTTP/1.1 response (chunked bodies decoded).
struct HttpAnswer {
  int status = 0;
  std::multimap<std::string, std::string> headers;  // names lower-cased
  std::string body;
  bool complete = false;  // the body was whole (its length or the last chunk arrived)

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

inline std::string LowerAscii(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// nullopt when `raw` is not an HTTP response head (httplib always writes one).
inline std::optional<HttpAnswer> ParseHttpAnswer(std::string_view raw) {
  const auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string_view::npos || !raw.starts_with("HTTP/1.1 ") || raw.size() < 12) {
    return std::nullopt;
  }
  HttpAnswer a;
  a.status = std::atoi(std::string(raw.substr(9, 3)).c_str());
  std::string_view head = raw.substr(0, head_end);
  head.remove_prefix(std::min(head.size(), head.find("\r\n") + 2));
  while (!head.empty()) {
    const auto eol = std::min(head.find("\r\n"), head.size());
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(std::min(head.size(), eol + 2));
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    a.headers.emplace(LowerAscii(std::string(line.substr(0, colon))), std::string(value));
  }
  std::string_view body = raw.substr(head_end + 4);
  if (LowerAscii(a.Header("transfer-encoding")) == "chunked") {
    while (true) {
      const auto eol = body.find("\r\n");
      if (eol == std::string_view::npos) return a;
      const std::size_t n = std::strtoul(std::string(body.substr(0, eol)).c_str(), nullptr, 16);
      body.remove_prefix(eol + 2);
      if (n == 0) {
        a.complete = true;
        return a;
      }
      if (body.size() < n + 2) return a;
      a.body.append(body.substr(0, n));
      body.remove_prefix(n + 2);
    }
  }
  const std::string length = a.Header("content-length");
  const std::size_t n = length.empty() ? body.size() : std::strtoul(length.c_str(), nullptr, 10);
  a.body = std::string(body.substr(0, n));
  a.complete = body.size() >= n;
  return a;
}

// One SSE event of a parsed stream.
struct SseEvent {
  std::string event;  // "" for a comment
  std::string data;
};

// Splits an event stream; nullopt when a line is neither a field this server sends nor a
// comment, or the stream ends inside an event.
inline std::optional<std::vector<SseEvent>> ParseSse(std::string_view body) {
  std::vector<SseEvent> events;
  while (!body.empty()) {
    const auto end = body.find("\n\n");
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view block = body.substr(0, end);
    body.remove_prefix(end + 2);
    SseEvent e;
    bool first_data = true;
    while (true) {
      const auto nl = std::min(block.find('\n'), block.size());
      const std::string_view line = block.substr(0, nl);
      if (line.starts_with(":")) {
        // a comment (keepalive)
      } else if (line.starts_with("event: ")) {
        e.event = std::string(line.substr(7));
      } else if (line.starts_with("data: ")) {
        if (!first_data) e.data += '\n';
        e.data += std::string(line.substr(6));
        first_data = false;
      } else {
        return std::nullopt;
      }
      if (nl == block.size()) break;
      block.remove_prefix(nl + 1);
    }
    events.push_back(std::move(e));
  }
  return events;
}

// "Name: value" with CR and LF removed, so a fuzzed value cannot end the head early.
inline std::string HeaderLine(std::string_view name, std::string_view value) {
  std::string line(name);
  line += ": ";
  for (char c : value) {
    if (c != '\r' && c != '\n') line += c;
  }
  line += "\r\n";
  return line;
}

inline std::string BuildRequest(std::string_view method, std::string_view target,
                                const std::string& headers, std::string_view body) {
  std::string raw(method);
  raw += ' ';
  for (char c : target) raw += (c == ' ' || c == '\r' || c == '\n') ? '_' : c;
  raw += " HTTP/1.1\r\n";
  raw += headers;
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  raw += "\r\n";
  raw.append(body);
  return raw;
}

}  // namespace sandbox::fuzz
