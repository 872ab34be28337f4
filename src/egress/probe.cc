#include "probe.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "sandbox/core/unique_fd.h"
#include "socket_address.h"

namespace sandbox::egress {

int ProbeTcp(const config::IpAddress& address, std::uint16_t port,
             std::chrono::milliseconds timeout) {
  const SocketAddress to = ToSocketAddress(address, port);
  Fd fd(::socket(to.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno;
  if (::connect(fd.get(), to.sockaddr_ptr(), to.length) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ETIMEDOUT;
    pollfd p{fd.get(), POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ETIMEDOUT;
    int error = 0;
    socklen_t len = sizeof(error);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) return errno;
    return error;
  }
}

}  // namespace sandbox::egress
