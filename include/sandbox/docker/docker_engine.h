// DockerEngine: the engine::ContainerEngine of a Docker (or Docker-API-compatible) engine, over
// one Client. The Docker-specific half of a sandbox lives here: the container spec every
// sandbox is created from (ToContainerSpec: the hardening no path may forget), the
// create-attach-start order, and the kill and remove calls with the engine's quirks.
//
// Thread-safety: immutable after construction; every method may be called from any thread
// (the Client is shared the same way).
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/docker/client.h"
#include "sandbox/docker/container_spec.h"
#include "sandbox/engine/container_engine.h"

namespace sandbox::docker {

// The Docker container spec of `spec`: its fields, plus what every sandbox gets (see
// engine::SandboxSpec): network none, read-only root, all capabilities dropped,
// no-new-privileges, the seccomp profile as its JSON text, init, private IPC, memory+swap equal
// to memory, stdin/stdout/stderr attached (StdinOnce unless keep_stdin_open), the image's
// entrypoint replaced, and AutoRemove: when the server dies, the attach connection closes, the
// harness sees end of input and exits, and the engine removes the container by itself.
// A sandbox with a network (spec.network, a pool with an egress policy) joins that network
// instead, with the proxy's resolver and environment.
ContainerSpec ToContainerSpec(const engine::SandboxSpec& spec);

// The body of POST /networks/create for an egress network: internal, inter-container traffic
// off, no IPv6, no masquerade, the bridge named as asked.
nlohmann::json ToNetworkBody(const engine::NetworkSpec& network);

// The Docker container spec of a helper container (engine::ServiceSpec).
ContainerSpec ToServiceContainerSpec(const engine::ServiceSpec& service);

class DockerEngine final : public engine::ContainerEngine {
 public:
  // `client` must outlive the engine. `logger` (may be null) hears the remove retries.
  DockerEngine(std::string name, const Client& client, std::shared_ptr<spdlog::logger> logger);

  const std::string& name() const override { return name_; }
  std::string_view kind() const override { return "Docker"; }
  std::chrono::milliseconds call_timeout() const override;

  Status Ping(engine::Deadline deadline) const override;
  Result<engine::ImageFacts> CheckImage(const std::string& image,
                                        engine::Deadline deadline) const override;
  // Create, then attach (before the start, so no early output is lost), then start.
  Result<engine::Launched> Launch(const engine::SandboxSpec& spec, engine::Deadline deadline,
                                  const std::atomic<bool>* cancel) const override;
  Result<std::unique_ptr<engine::AttachedStream>> Reattach(
      const std::string& id, engine::Deadline deadline) const override;
  Status Narrow(const std::string& id, const engine::ResourceUpdate& update,
                engine::Deadline deadline) const override;
  Result<engine::SandboxState> Inspect(const std::string& id,
                                       engine::Deadline deadline) const override;
  // SIGKILL; 409 (not running) counts as killed.
  Status Kill(const std::string& id, engine::Deadline deadline) const override;
  // A forced remove (with anonymous volumes), asked again a few times on an engine error
  // (500 for a container exiting at that moment); on 409 (the engine is already removing it:
  // AutoRemove after exit) waits until it is gone.
  Status Remove(const std::string& id, engine::Deadline deadline) const override;
  Result<std::vector<engine::Listed>> List(const engine::Labels& all_of,
                                           engine::Deadline deadline) const override;

  Status CreateNetwork(const engine::NetworkSpec& spec, engine::Deadline deadline) const override;
  Status RemoveNetwork(const std::string& name, engine::Deadline deadline) const override;
  Result<std::vector<engine::ListedNetwork>> ListNetworks(const engine::Labels& all_of,
                                                          engine::Deadline deadline) const override;
  // Created on its first network, joined to the others before it starts.
  Result<engine::Launched> LaunchService(const engine::ServiceSpec& spec,
                                         engine::Deadline deadline) const override;

  // How long a failed Launch's clean-up may take to remove the container it made.
  static constexpr std::chrono::seconds kCleanupTimeout{40};

 private:
  // A launch that failed after its container was made: removes it, returns `error`.
  Error RemoveAfterFailure(const std::string& id, const Error& error) const;

  std::string name_;
  const Client& client_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sandbox::docker
