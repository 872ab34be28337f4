// The server's container engines (docker.engines, or docker.host's one), connected at start-up:
// each negotiates its own API version, its calls are counted with its name as the metric label,
// and it is reached through the engine seam (docker::DockerEngine) from here on.
//
// Thread-safety: immutable once connected; outlives everything that uses the engines.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/docker/client.h"
#include "sandbox/docker/docker_engine.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/metrics/metrics.h"

namespace sandbox::server {

class ConnectedEngines {
 public:
  // Connects every configured engine at once. With one engine, failing to reach it is an error
  // (as it always was); with several, an engine that does not answer is left out with an error
  // line (its pools run on the others: SandboxService), and none answering is an error.
  // `curl` and `metrics` must outlive the engines.
  static Result<std::unique_ptr<ConnectedEngines>> Connect(
      const config::Config& config, const docker::CurlGlobal& curl, metrics::Metrics& metrics,
      const std::shared_ptr<spdlog::logger>& logger);

  // The connected engines, in configuration order.
  const engine::EngineList& list() const { return list_; }
  // Whether the engine of that name is reached over a Unix socket (this machine's).
  bool IsLocal(const engine::ContainerEngine& engine) const;
  // The engine this server's own container would be on: the first local one, else the first.
  const engine::ContainerEngine& home() const;

 private:
  struct One {
    config::EngineConfig config;
    std::unique_ptr<docker::Client> client;
    std::unique_ptr<docker::DockerEngine> engine;
  };
  ConnectedEngines() = default;

  std::vector<One> engines_;
  engine::EngineList list_;
};

}  // namespace sandbox::server
