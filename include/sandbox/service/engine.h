// The execution engine as the server runs it: the service of one-shot runs and, with sessions
// on, the session manager, each over its pools (sandbox_pools.h). The one place main assembles
// them, in their order: the service first (its rules check sessions' requests too), then the
// sessions, which adopt what an earlier server left before they start; and at the end the
// sessions go (or are left running for the next server) before the pools they came from stop.
//
// Thread-safety: service() and sessions() from any thread; Shutdown() from one.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/service/sandbox_pools.h"
#include "sandbox/service/sandbox_service.h"
#include "sandbox/service/session_manager.h"

namespace sandbox::service {

class Engine {
 public:
  // Builds and starts everything over HarnessSandboxes on `engines` (each pool on its own,
  // SandboxService::Create); the session containers in `left_sessions` (the sweeps'
  // SweepCounts::left_sessions, of every engine) are adopted or removed first. `config` and
  // `engines` must outlive the engine.
  static Result<std::unique_ptr<Engine>> Start(const config::Config& config,
                                               const engine::EngineList& engines,
                                               const ServiceOptions& options,
                                               const std::vector<engine::Listed>& left_sessions,
                                               const std::shared_ptr<spdlog::logger>& logger);
  // Shutdown().
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  SandboxService& service() { return *service_; }
  // Null while sessions are off (sessions.enabled false).
  SessionManager* sessions() { return sessions_.get(); }

  // Ends every session (with sessions.restart_grace_s > 0, leaves their containers running
  // for the next server instead), then stops the pools. Idempotent.
  void Shutdown();

 private:
  Engine() = default;

  std::unique_ptr<SandboxService> service_;
  std::unique_ptr<SessionManager> sessions_;  // after service_: it uses the service's rules
};

}  // namespace sandbox::service
