// MCP on stdin/stdout: the stdio transport, with a thread that waits for signals.
#include <unistd.h>

#include <atomic>
#include <thread>

#include "front_end.h"
#include "sandbox/transport/stdio_transport.h"

namespace sandbox::server {

int ServeStdio(const FrontEnd& front) {
  const auto& logger = front.logger;
  transport::StdioOptions stdio_options;
  stdio_options.max_message_bytes = static_cast<std::size_t>(front.config.server.max_body_bytes);
  transport::StdioTransport stdio(front.dispatcher, stdio_options, logger);
  std::atomic<bool> input_closed{false};
  // No request guard: stdio has no tokens to change.
  admin::ConfigReloader reloader(front.config, front.load_config, nullptr, front.tuner,
                                 &front.metrics, logger);
  std::thread signal_thread([&] {
    const int received = front.signals.WaitForStop(reloader, *logger);
    if (input_closed.load()) return;
    logger->info("signal {} received, cancelling runs and shutting down", received);
    stdio.Stop();
  });
  logger->info("serving MCP on stdin/stdout");
  stdio.Run(STDIN_FILENO, STDOUT_FILENO);
  input_closed.store(true);
  SignalWaiter::Wake(signal_thread);
  signal_thread.join();
  return 0;
}

}  // namespace sandbox::server
