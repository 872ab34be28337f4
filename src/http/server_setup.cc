#include "sandbox/http/server_setup.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/core/error.h"
#include "sandbox/http/rpc_error.h"
#include "sandbox/http1/request_head.h"
#include "sandbox/jsonrpc/json_rpc.h"
#include "worker_pool.h"

namespace sandbox::http {
namespace {

// What cpp-httplib's own refusals (it sends them with empty bodies) mean, for their JSON body.
std::string OwnRefusalMessage(const httplib::Request& req, int status,
                              std::int64_t max_body_bytes) {
  switch (status) {
    case 400:
      return "Bad Request: the request line or a header could not be parsed";
    case 404:
      return "Not Found: no route for " + req.method + " " + req.path;
    case 405:
      return "Method Not Allowed: " + req.method + " is not served on " + req.path;
    case 413:
      return "Payload Too Large: the request body is larger than the server accepts "
             "(server.max_body_bytes = " +
             std::to_string(max_body_bytes) + ")";
    case 414:
      return "URI Too Long: the request line is longer than the server accepts "
             "(max_request_line = " +
             std::to_string(kHttplibMaxRequestLine) + ")";
    case 416:
      return "Range Not Satisfiable: the Range header does not fit the response";
    case 500:
      return "Internal Server Error: the request failed inside the server";
    default:
      return std::to_string(status) + " " + std::string(ReasonPhrase(status));
  }
}

}  // namespace

void ConfigureHttpServer(httplib::Server& server, const HttpServerOptions& options,
                         const RequestGuard& guard) {
  // The Debian .so ignores CPPHTTPLIB_THREAD_POOL_COUNT; only new_task_queue sizes the pool.
  // Workers start on demand and the last idle one serves next (WorkerPool says why).
  const auto threads = static_cast<std::size_t>(std::max(options.threads, 1)) +
                       static_cast<std::size_t>(std::max(options.stream_workers, 0));
  // The ordinary workers start at once (a steady thread count); stream workers on demand.
  const auto ordinary = static_cast<std::size_t>(std::max(options.threads, 1));
  server.new_task_queue = [threads, ordinary] { return new WorkerPool(threads, ordinary); };
  server.set_payload_max_length(static_cast<std::size_t>(options.max_body_bytes));
  server.set_read_timeout(options.read_timeout_s, 0);
  server.set_write_timeout(options.write_timeout_s, 0);
  server.set_keep_alive_timeout(options.keep_alive_timeout_s);
  server.set_keep_alive_max_count(options.keep_alive_max_requests);
  // Called for every status >= 400 before it is written: a refusal that a handler wrote has a
  // body already and passes untouched; cpp-httplib's own (parse errors, 413, 414, unknown
  // routes, exceptions) get a JSON body saying what was wrong.
  const std::int64_t max_body = options.max_body_bytes;
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [max_body](const httplib::Request& req, httplib::Response& res) {
        // An exception's what() is no business of the client's.
        res.headers.erase("EXCEPTION_WHAT");
        if (!res.body.empty() || res.content_length_ > 0 || res.content_provider_) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        SendRpcError(res, res.status, jsonrpc::rpc_code::kServerError,
                     OwnRefusalMessage(req, res.status, max_body));
        return httplib::Server::HandlerResponse::Handled;
      }));
  guard.Install(server);
}

void ListenSocketOptions(int sock) {
  const int yes = 1;
  // Not httplib's default SO_REUSEPORT: with it a second server (or any process of the same
  // user) binds the same port and the kernel splits connections between them. SO_REUSEADDR
  // only lets a restarted server bind past connections in TIME_WAIT.
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  // Accepted connections inherit it. httplib writes a response's headers and body in separate
  // writes; with Nagle's algorithm the body waits for the client's ACK of the headers.
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
}

int BindServer(httplib::Server& server, const std::string& host, int port, int backlog) {
  // The socket is only handed out to the socket-options hook, which runs before bind; its last
  // call is the socket that was bound (failed attempts are closed before the next).
  auto bound_fd = std::make_shared<int>(-1);
  server.set_socket_options([bound_fd](int sock) {
    ListenSocketOptions(sock);
    *bound_fd = sock;
  });
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  server.set_socket_options(ListenSocketOptions);
  // listen() on a listening socket only changes its backlog.
  if (bound > 0 && *bound_fd >= 0 && ::listen(*bound_fd, backlog) != 0) return -1;
  return bound;
}

InternalSocket::InternalSocket(std::string dir)
    : dir_(std::move(dir)), path_(dir_ + "/http.sock") {}

InternalSocket::~InternalSocket() {
  if (bound_) ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

Result<std::unique_ptr<InternalSocket>> InternalSocket::Bind(httplib::Server& server,
                                                             const std::string& parent,
                                                             int backlog) {
  std::string pattern = parent + "/sandbox-mcp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  // mkdtemp creates the directory 0700: nobody else can reach what is inside.
  if (::mkdtemp(name.data()) == nullptr) {
    return Error(ErrorCode::kUnavailable, "cannot create the internal socket's directory under " +
                                              parent + ": " + ErrnoText(errno));
  }
  std::unique_ptr<InternalSocket> socket(new InternalSocket(name.data()));
  if (socket->path_.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error(ErrorCode::kInvalidArgument,
                 "the internal socket's path " + socket->path_ +
                     " is longer than a Unix socket's " +
                     std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                     " bytes; set TMPDIR to a shorter directory");
  }
  // As in BindServer: the socket-options hook is where httplib shows the socket it binds.
  auto bound_fd = std::make_shared<int>(-1);
  server.set_address_family(AF_UNIX);
  server.set_socket_options([bound_fd](int sock) { *bound_fd = sock; });
  // For AF_UNIX httplib takes the host as the path; the port is unused.
  const bool bound = server.bind_to_port(socket->path_, 80);
  server.set_socket_options([](int) {});
  if (!bound || *bound_fd < 0) {
    return Error(ErrorCode::kUnavailable,
                 "cannot listen on the internal socket " + socket->path_ + ": " + ErrnoText(errno));
  }
  socket->bound_ = true;
  // The directory already keeps others out; the socket's own mode says so too.
  if (::chmod(socket->path_.c_str(), S_IRUSR | S_IWUSR) != 0 || ::listen(*bound_fd, backlog) != 0) {
    return Error(ErrorCode::kUnavailable,
                 "cannot set up the internal socket " + socket->path_ + ": " + ErrnoText(errno));
  }
  return socket;
}

void StopListening(httplib::Server& server, const std::atomic<bool>& listen_returned) {
  // Polled: httplib offers no signal for "listening"; the wait is at most the time the serving
  // thread takes to be scheduled.
  while (!server.is_running() && !listen_returned.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  server.stop();
}

std::string InternalSocketParent() {
  const char* tmpdir = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): nobody sets it
  if (tmpdir != nullptr && tmpdir[0] == '/') return tmpdir;
  return "/tmp";
}

}  // namespace sandbox::http
