// Shared set-up of the Docker integration tests: one Client for the whole run, the test image,
// labelled container specs, an RAII guard per container, and a global TearDown that force-removes
// every container labelled io.sandbox-mcp.test=true, so failing tests leave nothing behind.
// The tests FAIL (never skip) when no engine answers.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sandbox/docker/client.h"

namespace sandbox::docker::testing {

inline constexpr char kManagedLabel[] = "io.sandbox-mcp.managed";
inline constexpr char kTestLabel[] = "io.sandbox-mcp.test";
// Other suites (harness, pool) also label their containers io.sandbox-mcp.test=true and may run
// at the same time, so this run's containers carry a run id too and clean-up is scoped to it.
inline constexpr char kRunLabel[] = "io.sandbox-mcp.test-run";

class DockerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  const Client* client() const { return client_.get(); }
  const std::string& connect_error() const { return connect_error_; }

  // Unique per process: "docker-<pid>-<start time>".
  const std::string& run_id() const { return run_id_; }

  // Force-removes containers labelled io.sandbox-mcp.test=true that belong to this run, or, with
  // `stale_after_s` > 0, to any run and are older than that (leftovers of a crashed run).
  int RemoveTestContainers(std::int64_t stale_after_s = 0);

 private:
  std::unique_ptr<CurlGlobal> curl_;
  std::unique_ptr<Client> client_;
  std::string connect_error_;
  std::string run_id_;
};

DockerEnvironment& Env();

// SANDBOX_IMAGE or sandbox-mcp-python:latest.
std::string TestImage();

// A spec from the test image running `cmd`, carrying the managed, test and run labels.
ContainerSpec TestSpec(std::vector<std::string> cmd);

// Force-removes its container (and anonymous volumes) when destroyed.
class ContainerGuard {
 public:
  ContainerGuard() = default;
  explicit ContainerGuard(std::string id) : id_(std::move(id)) {}
  ~ContainerGuard();
  ContainerGuard(const ContainerGuard&) = delete;
  ContainerGuard& operator=(const ContainerGuard&) = delete;
  const std::string& id() const { return id_; }

 private:
  std::string id_;
};

// Fixture: fails every test when the engine could not be reached.
class DockerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Env().client(), nullptr) << "no Docker engine: " << Env().connect_error();
  }
  const Client& client() const { return *Env().client(); }

  // Creates a container from `spec`; the guard removes it.
  std::unique_ptr<ContainerGuard> Create(const ContainerSpec& spec);
};

}  // namespace sandbox::docker::testing
