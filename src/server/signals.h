// Termination and reload signals, taken on one thread with sigwait so that no other thread is
// ever interrupted by them.
#pragma once

#include <signal.h>
#include <spdlog/logger.h>

#include <thread>

#include "sandbox/admin/config_reload.h"

namespace sandbox::server {

class SignalWaiter {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in every thread it starts
  // later: construct it before any other thread exists. Ignores SIGPIPE (a client that
  // vanishes must not kill the server).
  SignalWaiter();

  // Waits for signals: SIGHUP reloads the configuration and waits on; SIGINT or SIGTERM is
  // returned.
  int WaitForStop(admin::ConfigReloader& reloader, spdlog::logger& logger) const;

  // Makes a thread blocked in WaitForStop return (with SIGTERM).
  static void Wake(std::thread& waiter);

 private:
  sigset_t signals_{};
};

}  // namespace sandbox::server
