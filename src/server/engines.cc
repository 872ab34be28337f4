#include "engines.h"

#include <optional>
#include <thread>
#include <utility>

namespace sandbox::server {
namespace {

docker::ClientOptions ClientOptionsOf(const config::Config& config,
                                      const config::EngineConfig& engine,
                                      metrics::Metrics& metrics) {
  docker::ClientOptions options;
  options.transport.host = engine.host;
  if (!engine.tls_ca.empty()) {
    options.transport.tls =
        docker::TlsOptions{engine.tls_ca, engine.tls_cert, engine.tls_key, true};
  }
  options.call_timeout = config.docker.call_timeout;
  options.on_call = [&metrics, name = engine.name](const docker::EngineCall& call) {
    metrics.RecordEngineCall(name, call.operation, call.status, call.took);
  };
  return options;
}

}  // namespace

Result<std::unique_ptr<ConnectedEngines>> ConnectedEngines::Connect(
    const config::Config& config, const docker::CurlGlobal& curl, metrics::Metrics& metrics,
    const std::shared_ptr<spdlog::logger>& logger) {
  const std::vector<config::EngineConfig> configured = config::EffectiveEngines(config.docker);
  std::vector<std::optional<Result<std::unique_ptr<docker::Client>>>> clients(configured.size());
  {
    // At once: an engine that does not answer costs its deadline once, not once per engine.
    std::vector<std::jthread> connecting;
    for (std::size_t i = 0; i < configured.size(); ++i) {
      connecting.emplace_back([&, i] {
        clients[i] = docker::Client::Connect(curl, ClientOptionsOf(config, configured[i], metrics));
      });
    }
  }
  std::unique_ptr<ConnectedEngines> out(new ConnectedEngines());
  std::string failures;
  for (std::size_t i = 0; i < configured.size(); ++i) {
    const auto& ec = configured[i];
    auto& client = *clients[i];
    if (!client.ok()) {
      const Error error = client.error().WithContext(
          "cannot reach the Docker engine " +
          (configured.size() > 1 ? ec.name + " at " : std::string("at ")) + ec.host);
      if (configured.size() == 1) return error;
      logger->error("{}; its pools run on the other engines (restart the server to use it)",
                    error.ToString());
      failures += (failures.empty() ? "" : "; ") + error.message();
      continue;
    }
    One one;
    one.config = ec;
    one.client = std::move(client).value();
    logger->info("Docker engine {} at {} (API {})", ec.name, ec.host,
                 one.client->api_version().ToString());
    one.engine = std::make_unique<docker::DockerEngine>(ec.name, *one.client, logger);
    out->engines_.push_back(std::move(one));
  }
  if (out->engines_.empty()) {
    return Error(ErrorCode::kUnavailable, "no configured engine answers: " + failures);
  }
  for (const auto& one : out->engines_) out->list_.push_back(one.engine.get());
  return out;
}

bool ConnectedEngines::IsLocal(const engine::ContainerEngine& engine) const {
  for (const auto& one : engines_) {
    if (one.engine.get() == &engine) return one.config.host.rfind("unix://", 0) == 0;
  }
  return false;
}

const engine::ContainerEngine& ConnectedEngines::home() const {
  for (const auto& one : engines_) {
    if (IsLocal(*one.engine)) return *one.engine;
  }
  return *engines_.front().engine;
}

}  // namespace sandbox::server
