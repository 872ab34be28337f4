// sandbox-egress: the egress proxy of the sandboxes of pools with a network allowlist
// (docs/network.md). The server runs it in a container of its own with attached stdio: policy
// changes arrive as JSON lines on stdin (control.h), events leave as JSON lines on stdout
// (event_sink.h), diagnostics go to stderr. It exits when stdin ends (the server is gone) or
// on SIGTERM/SIGINT.
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "control.h"
#include "dns_responder.h"
#include "event_sink.h"
#include "policy_table.h"
#include "proxy.h"
#include "socket_address.h"
#include "tls_authority.h"
#include "upstream.h"

namespace {

using sandbox::egress::ProxyOptions;

constexpr char kUsage[] =
    "usage: sandbox-egress [--listen HOST:PORT] [--dns-port N] [limits]\n"
    "  --listen HOST:PORT          the proxy's address (default 0.0.0.0:3128)\n"
    "  --dns-port N                the null DNS resolver's UDP port on the same host\n"
    "                              (default 53; 0: off)\n"
    "  --max-connections N         open connections, all sandboxes (default 1024)\n"
    "  --max-connections-per-source N   from one sandbox (default 32)\n"
    "  --max-head-bytes N          a request head (default 16384)\n"
    "  --head-timeout-ms N         the request head and the TLS ClientHello (default 10000)\n"
    "  --connect-timeout-ms N      resolving and connecting upstream (default 10000)\n"
    "  --idle-timeout-ms N         a relay with no byte either way (default 300000)\n"
    "  --max-conn-bytes N          bytes one connection may carry, both ways (default\n"
    "                              4294967296); more: it is cut\n"
    "  --max-conn-time-ms N        how long one connection may live (default 3600000)\n"
    "  --buffer-bytes N            buffered per direction of a connection (default 65536)\n"
    "  --resolver-threads N        getaddrinfo threads (default 4)\n"
    "Control lines on stdin, events on stdout (JSON lines); logs on stderr.\n";

void Log(const std::string& message) { std::cerr << "sandbox-egress: " << message << std::endl; }

bool ParseNumber(std::string_view text, long long min, long long max, long long& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end && out >= min && out <= max;
}

struct Flags {
  std::string listen = "0.0.0.0:3128";
  long long dns_port = 53;
  ProxyOptions proxy;
  bool help = false;
};

// Parses the command line; false (after saying why) when it is wrong or asks for the usage.
bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      flags.help = true;
      return false;
    }
    if (i + 1 >= argc) {
      Log("missing a value after " + std::string(flag) + "\n" + kUsage);
      return false;
    }
    const std::string_view value = argv[++i];
    long long n = 0;
    auto number = [&](long long min, long long max) {
      if (ParseNumber(value, min, max, n)) return true;
      Log(std::string(flag) + " must be a number from " + std::to_string(min) + " to " +
          std::to_string(max));
      return false;
    };
    constexpr long long kBig = 1LL << 40;
    if (flag == "--listen") {
      flags.listen = std::string(value);
    } else if (flag == "--dns-port") {
      if (!number(0, 65535)) return false;
      flags.dns_port = n;
    } else if (flag == "--max-connections") {
      if (!number(1, 1'000'000)) return false;
      flags.proxy.max_connections = static_cast<int>(n);
    } else if (flag == "--max-connections-per-source") {
      if (!number(1, 1'000'000)) return false;
      flags.proxy.max_connections_per_source = static_cast<int>(n);
    } else if (flag == "--max-head-bytes") {
      if (!number(256, 1 << 20)) return false;
      flags.proxy.max_head_bytes = static_cast<std::size_t>(n);
    } else if (flag == "--head-timeout-ms") {
      if (!number(1, kBig)) return false;
      flags.proxy.head_timeout = std::chrono::milliseconds(n);
    } else if (flag == "--connect-timeout-ms") {
      if (!number(1, kBig)) return false;
      flags.proxy.connect_timeout = std::chrono::milliseconds(n);
    } else if (flag == "--idle-timeout-ms") {
      if (!number(1, kBig)) return false;
      flags.proxy.idle_timeout = std::chrono::milliseconds(n);
    } else if (flag == "--max-conn-bytes") {
      if (!number(65536, 1LL << 50)) return false;
      flags.proxy.max_conn_bytes = static_cast<std::uint64_t>(n);
    } else if (flag == "--max-conn-time-ms") {
      if (!number(1000, kBig)) return false;
      flags.proxy.max_conn_time = std::chrono::milliseconds(n);
    } else if (flag == "--buffer-bytes") {
      if (!number(1024, 64LL << 20)) return false;
      flags.proxy.buffer_bytes = static_cast<std::size_t>(n);
    } else if (flag == "--resolver-threads") {
      if (!number(1, 64)) return false;
      flags.proxy.resolver_threads = static_cast<int>(n);
    } else {
      Log("unknown flag " + std::string(flag) + "\n" + kUsage);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return flags.help ? 0 : 2;
  auto listen = sandbox::egress::ParseHostPort(flags.listen);
  if (!listen.ok()) {
    Log("--listen: " + listen.error().message());
    return 2;
  }
  // SIGTERM and SIGINT are taken by sigwait below, on a thread of their own.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  sandbox::egress::EventSink events(
      [](std::string_view line) { return sandbox::egress::WriteLineToFd(STDOUT_FILENO, line); });
  sandbox::egress::PolicyTable table;
  sandbox::egress::TlsSettings tls;  // the deployment CA arrives on stdin, if at all
  auto proxy = sandbox::egress::Proxy::Listen(listen->first, listen->second, flags.proxy, table,
                                              tls, events, sandbox::egress::SystemUpstream());
  if (!proxy.ok()) {
    Log(proxy.error().message());
    return 1;
  }
  std::unique_ptr<sandbox::egress::DnsResponder> dns;
  if (flags.dns_port != 0) {
    auto bound = sandbox::egress::DnsResponder::Bind(listen->first,
                                                     static_cast<int>(flags.dns_port), events);
    if (!bound.ok()) {
      Log("DNS: " + bound.error().message());
      return 1;
    }
    dns = std::move(*bound);
  }
  std::thread dns_thread;
  if (dns) dns_thread = std::thread([&dns] { dns->Run(); });

  sandbox::egress::Proxy& served = **proxy;
  const std::string host = listen->first;
  const bool v6 = host.find(':') != std::string::npos;
  nlohmann::json ready = {
      {"ev", "ready"},
      {"listen", (v6 ? "[" + host + "]" : host) + ":" + std::to_string(served.port())}};
  ready["dns_port"] = dns ? nlohmann::json(dns->port()) : nlohmann::json(nullptr);
  events.Emit(ready);
  Log("listening on " + ready["listen"].get<std::string>());

  // Daemon threads by intent: each ends the process's service by stopping the proxy; main
  // joins none of them but the DNS one (the control reader may sit in read() on stdin).
  std::thread([&served, signals] {
    int signal = 0;
    sigwait(&signals, &signal);
    Log(signal == SIGINT ? "stopping on SIGINT" : "stopping on SIGTERM");
    served.Stop();
  }).detach();
  // The control op "counters": what `stopped` reports, and the connections open now.
  const auto counters = [&served, &events] {
    const auto stats = served.stats();
    nlohmann::json answer = sandbox::egress::StatsJson(stats);
    answer["open"] = stats.open;
    answer["events_dropped"] = events.dropped();
    return answer;
  };
  std::thread([&served, &table, &tls, &events, counters] {
    sandbox::egress::RunControl(STDIN_FILENO, table, tls, events, counters);
    Log("stdin closed: stopping");
    served.Stop();
  }).detach();

  served.Run();
  if (dns) {
    dns->Stop();
    dns_thread.join();
  }
  nlohmann::json stopped = sandbox::egress::StatsJson(served.stats());
  stopped["ev"] = "stopped";
  stopped["events_dropped"] = events.dropped();
  events.Emit(stopped);
  events.Flush();
  // The detached threads still hold references: leave without running destructors.
  std::fflush(nullptr);
  std::_Exit(0);
}
