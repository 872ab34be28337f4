// FakeMaker: the service layer's SandboxMaker over FakeSandboxes (fake_sandbox.h), so tests of
// tests/unit/service run the real pools that service::BuildPools builds, without Docker.
// Thread-safety: as the SandboxMaker interface (Create from the pool's start workers).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/service/sandbox_pools.h"
#include "sandbox/service/session_record.h"
#include "support/fake_sandbox.h"

namespace sandbox::testing {

// Makes FakeSandboxes of one pool, as HarnessSandboxMaker makes real ones: a session sandbox
// that may outlive its server is made for a fresh session id.
class FakeMaker final : public service::SandboxMaker {
 public:
  FakeMaker(FakeWorld& world, runner::SandboxSetup setup)
      : world_(world), setup_(std::move(setup)), limits_(setup_.pool.limits) {}

  Result<std::unique_ptr<runner::Sandbox>> Create() override {
    std::string id;
    if (setup_.session && setup_.watchdog.count() > 0) id = service::NewSessionId(setup_.replica);
    return Start(std::move(id));
  }
  Result<std::unique_ptr<runner::Sandbox>> StartForSession(const std::string& session_id) override {
    return Start(session_id);
  }
  Result<std::unique_ptr<runner::Sandbox>> Adopt(const engine::Listed& container) override {
    (void)container;
    auto sandbox = std::make_unique<FakeSandbox>(world_, setup_.pool.name, std::string());
    sandbox->set_resume(world_.resume());
    return std::unique_ptr<runner::Sandbox>(std::move(sandbox));
  }
  void Remove(const engine::Listed& container) override {
    std::lock_guard lock(mu_);
    removed_.push_back(container.id);
  }
  config::Limits limits() const override {
    std::lock_guard lock(mu_);
    return limits_;
  }
  void SetLimits(const config::Limits& limits) override {
    std::lock_guard lock(mu_);
    limits_ = limits;
  }
  std::string python_version() const override { return "3.11"; }

  std::vector<std::string> removed() const {
    std::lock_guard lock(mu_);
    return removed_;
  }

 private:
  Result<std::unique_ptr<runner::Sandbox>> Start(std::string session_id) {
    if (world_.fail_starts()) return Error(ErrorCode::kUnavailable, "the engine is down");
    return std::unique_ptr<runner::Sandbox>(
        std::make_unique<FakeSandbox>(world_, setup_.pool.name, std::move(session_id)));
  }

  FakeWorld& world_;
  const runner::SandboxSetup setup_;
  mutable std::mutex mu_;
  config::Limits limits_;
  std::vector<std::string> removed_;
};

// The MakerFactory of FakeMakers in `world`.
inline service::MakerFactory FakeMakers(FakeWorld& world) {
  return [&world](runner::SandboxSetup setup) -> std::unique_ptr<service::SandboxMaker> {
    return std::make_unique<FakeMaker>(world, std::move(setup));
  };
}

}  // namespace sandbox::testing
