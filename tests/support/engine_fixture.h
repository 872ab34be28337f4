// Shared set-up for tests against the real Docker engine: one CurlGlobal, Client and
// DockerEngine (the engine::ContainerEngine over it, named "local" as main names it) per test
// binary, the project's policies loaded from the source tree, and a per-run instance id so a
// test binary only ever removes its own containers. Tests FAIL (never skip) without an engine.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "sandbox/config/config.h"
#include "sandbox/docker/client.h"
#include "sandbox/docker/docker_engine.h"
#include "sandbox/policy/container_profile.h"
#include "sandbox/policy/run_filter.h"
#include "sandbox/service/sandbox_service.h"

namespace sandbox::testing {

inline std::string SourceDir() {
  const char* dir = std::getenv("SANDBOX_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

inline std::string TestImage() {
  const char* image = std::getenv("SANDBOX_IMAGE");
  return image != nullptr ? image : "sandbox-mcp-python:latest";
}

// A unique instance id per test process: RemoveLeftovers() with it removes only this
// process's containers, never those of a server or another suite running beside it.
inline std::string TestInstanceId(const std::string& suite) {
  return "test-" + suite + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000);
}

inline std::shared_ptr<spdlog::logger> TestLogger(const std::string& name) {
  auto logger =
      std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_level(std::getenv("SANDBOX_TEST_DEBUG") != nullptr ? spdlog::level::debug
                                                                 : spdlog::level::warn);
  return logger;
}

// Process-wide engine connection for one test binary.
class Engine {
 public:
  static Engine& Get() {
    static Engine engine;  // test-only convenience; production code builds everything in main
    return engine;
  }
  const docker::Client& client() const { return *client_; }
  const docker::DockerEngine& engine() const { return *engine_; }
  const std::string& container_profile() const { return profile_; }
  const std::string& run_filter_bpf() const { return bpf_; }

 private:
  Engine() {
    auto client = docker::Client::Connect(curl_);
    if (!client.ok()) {
      ADD_FAILURE() << "no Docker engine: " << client.error().ToString();
      std::abort();
    }
    client_ = std::move(*client);
    engine_ = std::make_unique<docker::DockerEngine>("local", *client_, TestLogger("engine"));
    auto profile =
        policy::ContainerProfile::LoadFile(SourceDir() + "/policies/seccomp-container.json");
    auto filter = policy::RunFilter::LoadFile(SourceDir() + "/policies/seccomp-run.json");
    if (!profile.ok() || !filter.ok()) {
      ADD_FAILURE() << "policies: "
                    << (!profile.ok() ? profile.error().ToString() : filter.error().ToString());
      std::abort();
    }
    profile_ = profile->compact_json();
    bpf_ = filter->bpf();
  }
  docker::CurlGlobal curl_;
  std::unique_ptr<docker::Client> client_;
  std::unique_ptr<docker::DockerEngine> engine_;
  std::string profile_;
  std::string bpf_;
};

// A config with one small pool of the given mode on the test image.
inline config::Config SmallConfig(config::PoolMode mode, const std::string& instance_id) {
  config::Config c;
  c.instance_id = instance_id;
  c.pools[0].name = mode == config::PoolMode::kFresh ? "fresh" : "recycle";
  c.pools[0].mode = mode;
  c.pools[0].image = TestImage();
  c.pools[0].min_idle = 1;
  c.pools[0].max_total = 2;
  c.pools[0].acquire_timeout = std::chrono::seconds(120);
  c.pools[0].limits.timeout_s = 20;
  c.default_pool = c.pools[0].name;
  return c;
}

}  // namespace sandbox::testing
