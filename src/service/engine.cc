#include "sandbox/service/engine.h"

#include <utility>

namespace sandbox::service {

Result<std::unique_ptr<Engine>> Engine::Start(const config::Config& config,
                                              const engine::EngineList& engines,
                                              const ServiceOptions& options,
                                              const std::vector<engine::Listed>& left_sessions,
                                              const std::shared_ptr<spdlog::logger>& logger) {
  std::unique_ptr<Engine> engine(new Engine());
  auto service = SandboxService::Create(config, engines, options, logger);
  if (!service.ok()) return service.error();
  engine->service_ = std::move(*service);
  engine->service_->Start();
  if (config.sessions.enabled) {
    engine->sessions_ = SessionManager::Create(config, engine->service_->resolver(),
                                               engine->service_->makers(), options, logger);
    engine->sessions_->Adopt(left_sessions);
    engine->sessions_->Start();
  }
  return engine;
}

Engine::~Engine() { Shutdown(); }

void Engine::Shutdown() {
  if (sessions_) sessions_->Shutdown(/*leave_sessions=*/true);
  if (service_) service_->Shutdown();
}

}  // namespace sandbox::service
