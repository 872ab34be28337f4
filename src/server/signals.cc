#include "signals.h"

#include <pthread.h>

namespace sandbox::server {

SignalWaiter::SignalWaiter() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int SignalWaiter::WaitForStop(admin::ConfigReloader& reloader, spdlog::logger& logger) const {
  int received = 0;
  while (true) {
    sigwait(&signals_, &received);
    if (received != SIGHUP) return received;
    logger.info("SIGHUP received, reloading the configuration");
    reloader.Reload();
  }
}

void SignalWaiter::Wake(std::thread& waiter) {
  // SIGTERM is blocked everywhere; this only wakes the sigwait of the waiting thread.
  // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread)
  pthread_kill(waiter.native_handle(), SIGTERM);
}

}  // namespace sandbox::server
