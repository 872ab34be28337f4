// sandbox-mcp: builds every component from the validated configuration and runs the server.
// Everything is constructed here and passed down; nothing is global.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>

#include "sandbox/config/config.h"
#include "sandbox/docker/client.h"
#include "sandbox/policy/container_profile.h"
#include "sandbox/policy/run_filter.h"
#include "sandbox/service/sandbox_service.h"

#ifndef SANDBOX_SOURCE_POLICY_DIR
#define SANDBOX_SOURCE_POLICY_DIR "policies"
#endif

namespace {

using sandbox::Error;
using sandbox::ErrorCode;

extern "C" char** environ;

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

// A relative policy path is looked up in the working directory first, then in the source
// tree the binary was built from (so the server runs from any directory of a checkout).
std::filesystem::path ResolvePolicy(const std::string& configured) {
  std::filesystem::path path(configured);
  if (path.is_absolute() || std::filesystem::exists(path)) return path;
  std::filesystem::path fallback =
      std::filesystem::path(SANDBOX_SOURCE_POLICY_DIR).parent_path() / path;
  return std::filesystem::exists(fallback) ? fallback : path;
}

int Fail(const std::shared_ptr<spdlog::logger>& logger, const Error& error) {
  logger->critical("{}", error.ToString());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = sandbox::config::ParseCommandLine(argc, argv, Environment());
  if (!parsed.ok()) {
    std::cerr << "sandbox-mcp: " << parsed.error().message() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << sandbox::config::UsageText();
    return 0;
  }
  if (parsed->version) {
    std::cout << "sandbox-mcp " << SANDBOX_VERSION << "\n";
    return 0;
  }
  const sandbox::config::Config config = std::move(parsed->config);

  // Logs go to stderr: with --stdio, stdout carries the protocol.
  auto logger = spdlog::stderr_color_mt("sandbox-mcp");
  logger->set_level(spdlog::level::from_str(config.log_level));
  if (auto valid = sandbox::config::Validate(config); !valid.ok()) return Fail(logger, valid.error());

  // Handle termination signals on one thread (sigwait), so no other thread is interrupted.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that vanishes must not kill the server

  auto profile = sandbox::policy::ContainerProfile::LoadFile(ResolvePolicy(config.policy.container_seccomp));
  if (!profile.ok()) return Fail(logger, profile.error());
  auto run_filter = sandbox::policy::RunFilter::LoadFile(ResolvePolicy(config.policy.run_seccomp));
  if (!run_filter.ok()) return Fail(logger, run_filter.error());

  sandbox::docker::CurlGlobal curl;
  sandbox::docker::ClientOptions client_options;
  client_options.transport.host = config.docker.host;
  if (!config.docker.tls_ca.empty()) {
    client_options.transport.tls =
        sandbox::docker::TlsOptions{config.docker.tls_ca, config.docker.tls_cert, config.docker.tls_key, true};
  }
  client_options.call_timeout = config.docker.call_timeout;
  auto client = sandbox::docker::Client::Connect(curl, client_options);
  if (!client.ok()) {
    return Fail(logger, client.error().WithContext("cannot reach the Docker engine at " + config.docker.host));
  }
  logger->info("Docker engine at {} (API {})", config.docker.host, (*client)->api_version().ToString());

  auto leftovers = sandbox::service::RemoveLeftovers(**client, config.instance_id, logger);
  if (!leftovers.ok()) return Fail(logger, leftovers.error());

  sandbox::service::ServiceOptions service_options;
  service_options.container_seccomp_json = profile->compact_json();
  service_options.run_filter_bpf = run_filter->bpf();
  auto service = sandbox::service::SandboxService::Create(config, **client, service_options, logger);
  if (!service.ok()) return Fail(logger, service.error());
  (*service)->Start();

  httplib::Server http;
  http.Get("/healthz", [&](const httplib::Request&, httplib::Response& res) {
    auto ping = (*client)->Ping(sandbox::docker::CallOptions::Within(std::chrono::seconds(2)));
    nlohmann::json body = {{"status", ping.ok() ? "ok" : "degraded"},
                           {"engine", ping.ok() ? "reachable" : ping.error().message()}};
    nlohmann::json pools = nlohmann::json::array();
    for (const auto& [name, stats] : (*service)->PoolStats()) {
      pools.push_back({{"name", name}, {"idle", stats.idle}, {"leased", stats.leased},
                       {"starting", stats.starting}});
    }
    body["pools"] = pools;
    res.status = ping.ok() ? 200 : 503;
    res.set_content(body.dump(), "application/json");
  });

  std::thread signal_thread([&] {
    int received = 0;
    sigwait(&signals, &received);
    logger->info("signal {} received, shutting down", received);
    http.stop();
  });

  if (!http.bind_to_port(config.server.listen_host, config.server.listen_port)) {
    logger->critical("cannot listen on {}:{}", config.server.listen_host, config.server.listen_port);
    pthread_kill(signal_thread.native_handle(), SIGTERM);
    signal_thread.join();
    return 1;
  }
  logger->info("listening on http://{}:{}", config.server.listen_host, config.server.listen_port);
  http.listen_after_bind();

  signal_thread.join();
  (*service)->Shutdown();
  logger->info("stopped; all sandbox containers removed");
  return 0;
}
