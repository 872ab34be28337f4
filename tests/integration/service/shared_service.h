// One SandboxService per pool mode, shared by every test of a suite (starting warm containers is
// the slow part), plus small helpers to run code through it. Used by the service tests and the
// attack suite (tests/integration/attack).
//
// Usage: a fixture owns a static SharedServices, creates it in SetUpTestSuite and calls
// Finish() in TearDownTestSuite, which shuts the services down and checks that no container of
// theirs is left behind.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/engine_fixture.h"

namespace sandbox::testing {

class Recorder final : public exec::RunObserver {
 public:
  void OnStarted() override { started = true; }
  void OnOutput(exec::Stream s, std::string_view bytes) override {
    (s == exec::Stream::kStdout ? out : err).append(bytes);
    ++chunks;
  }
  void OnImage(const exec::Image&) override { ++images; }
  void OnFile(const exec::OutputFile&) override { ++files; }
  bool started = false;
  std::string out, err;
  int chunks = 0;
  int images = 0;
  int files = 0;
};

class SharedServices {
 public:
  // `tune` may adjust each mode's pool (limits, sizes) before the service is created.
  // `tune_config` may adjust the whole configuration (output bounds) after that.
  explicit SharedServices(std::string suite, std::function<void(config::PoolConfig&)> tune = {},
                          std::function<void(config::Config&)> tune_config = {})
      : suite_(std::move(suite)), tune_(std::move(tune)), tune_config_(std::move(tune_config)) {}
  SharedServices(const SharedServices&) = delete;
  SharedServices& operator=(const SharedServices&) = delete;
  ~SharedServices() { Finish(); }

  // The service of `mode`, created and started on first use; nullptr (with a test failure)
  // when it cannot be created.
  service::SandboxService* Get(config::PoolMode mode) {
    auto it = entries_.find(mode);
    if (it != entries_.end()) return it->second->service.get();
    // The service keeps a reference to its config: the entry must not move once it exists.
    auto owned = std::make_unique<Entry>();
    Entry& entry = *owned;
    entry.instance = TestInstanceId(suite_ + "-" + std::string(config::PoolModeName(mode)));
    entry.config = SmallConfig(mode, entry.instance);
    if (tune_) tune_(entry.config.pools[0]);
    if (tune_config_) tune_config_(entry.config);
    service::ServiceOptions options;
    options.container_seccomp_json = Engine::Get().container_profile();
    options.run_filter_bpf = Engine::Get().run_filter_bpf();
    auto created = service::SandboxService::Create(entry.config, Engine::Get().engine(), options,
                                                   TestLogger(suite_));
    if (!created.ok()) {
      ADD_FAILURE() << "SandboxService::Create: " << created.error().ToString();
      return nullptr;
    }
    entry.service = std::move(*created);
    entry.service->Start();
    auto* raw = entry.service.get();
    entries_.emplace(mode, std::move(owned));
    return raw;
  }

  // The instance id (container label) of a mode's service, "" before Get(mode).
  std::string Instance(config::PoolMode mode) const {
    auto it = entries_.find(mode);
    return it == entries_.end() ? std::string() : it->second->instance;
  }

  // Shuts every service down; each must have removed all its containers.
  void Finish() {
    for (auto& [mode, entry] : entries_) {
      entry->service->Shutdown();
      entry->service.reset();
      auto left = service::RemoveLeftovers(Engine::Get().engine(), entry->instance, nullptr);
      EXPECT_TRUE(left.ok()) << (left.ok() ? "" : left.error().ToString());
      if (left.ok()) {
        EXPECT_EQ(*left, 0) << "the " << config::PoolModeName(mode)
                            << " service left containers behind";
      }
    }
    entries_.clear();
  }

 private:
  struct Entry {
    std::string instance;
    config::Config config;
    std::unique_ptr<service::SandboxService> service;
  };
  std::string suite_;
  std::function<void(config::PoolConfig&)> tune_;
  std::function<void(config::Config&)> tune_config_;
  std::map<config::PoolMode, std::unique_ptr<Entry>> entries_;
};

// Runs `code` and returns the result; a service error fails the test and yields a default
// (verdict internal) result.
inline exec::RunResult RunCode(service::SandboxService* service, const std::string& code,
                               exec::LimitOverrides limits = {},
                               std::vector<exec::InputFile> files = {},
                               Recorder* recorder = nullptr) {
  if (service == nullptr) {
    ADD_FAILURE() << "no service";
    return {};
  }
  exec::RunRequest request;
  request.code = code;
  request.limits = limits;
  request.files = std::move(files);
  Recorder local;
  exec::CancelToken cancel;
  auto result = service->Run(request, recorder != nullptr ? *recorder : local, cancel);
  EXPECT_TRUE(result.ok()) << result.error().ToString();
  return result.ok() ? *result : exec::RunResult{};
}

// A one-line summary of a result for assertion messages.
inline std::string Describe(const exec::RunResult& r) {
  std::string s = "verdict " + std::string(exec::VerdictName(r.verdict)) + ", exit_code " +
                  std::to_string(r.exit_code) + ", signal " +
                  (r.signal ? std::to_string(*r.signal) : std::string("-")) + ", detail \"" +
                  r.detail + "\"";
  if (r.traceback) s += ", traceback " + r.traceback->type + ": " + r.traceback->message;
  s += "\nstdout: " + r.stdout_text.substr(0, 2000);
  s += "\nstderr: " +
       r.stderr_text.substr(r.stderr_text.size() > 2000 ? r.stderr_text.size() - 2000 : 0);
  return s;
}

inline std::string ModeParamName(const ::testing::TestParamInfo<config::PoolMode>& info) {
  return std::string(config::PoolModeName(info.param));
}

}  // namespace sandbox::testing
