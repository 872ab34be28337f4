// The null resolver on UDP (dns_answer.h): a sandbox on an egress network has the proxy as its
// DNS server, and every query it sends is answered NXDOMAIN and logged as an event.
// Thread-safety: Run on one thread; Stop from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "event_sink.h"
#include "sandbox/core/result.h"
#include "sandbox/core/unique_fd.h"

namespace sandbox::egress {

struct DnsResponderOptions {
  std::uint64_t max_events_per_second = 100;  // query events beyond it are counted, not sent
};

class DnsResponder {
 public:
  // Binds UDP `host`:`port` (0: any free port, see port()).
  static Result<std::unique_ptr<DnsResponder>> Bind(const std::string& host, int port,
                                                    EventSink& events,
                                                    DnsResponderOptions options = {});
  ~DnsResponder() = default;
  DnsResponder(const DnsResponder&) = delete;
  DnsResponder& operator=(const DnsResponder&) = delete;

  // Answers queries until Stop().
  void Run();
  void Stop();
  int port() const { return port_; }
  std::uint64_t answered() const { return answered_.load(); }

 private:
  DnsResponder(Fd fd, int port, EventSink& events, DnsResponderOptions options);

  Fd fd_;
  int port_;
  EventSink& events_;
  DnsResponderOptions options_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> answered_{0};
};

}  // namespace sandbox::egress
