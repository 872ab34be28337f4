// FakeEngine: an engine::ContainerEngine held in memory, for unit tests of the code above the
// seam (container handles, the start-up sweep, the owner probe). Its sandboxes are records the
// test adds or Launch makes; every call that changes one is logged (calls()), so a test can
// assert what was asked of the engine, and what was not. A launched sandbox's stream takes
// what is written and ends at once when read (there is no process behind it).
//
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/engine/container_engine.h"

namespace sandbox::testing {

class FakeStream final : public engine::AttachedStream {
 public:
  Status Write(std::string_view bytes, engine::Deadline /*deadline*/) override {
    if (closed_) return Error(ErrorCode::kCancelled, "stream closed");
    written_.append(bytes);
    return OkStatus();
  }
  Status CloseStdin() override { return OkStatus(); }
  Result<std::optional<engine::StreamChunk>> Read(engine::Deadline /*deadline*/) override {
    if (closed_) return Error(ErrorCode::kCancelled, "stream closed");
    return std::optional<engine::StreamChunk>();
  }
  void Close() override { closed_ = true; }

 private:
  std::atomic<bool> closed_{false};
  std::string written_;
};

class FakeEngine final : public engine::ContainerEngine {
 public:
  explicit FakeEngine(std::string name = "fake") : name_(std::move(name)) {}

  // A sandbox the engine has, e.g. one an earlier server left.
  void Add(engine::Listed listed, engine::SandboxState state) {
    std::lock_guard lock(mu_);
    if (listed.engine.empty()) listed.engine = name_;
    std::string id = listed.id;
    sandboxes_[id] = Held{std::move(listed), std::move(state)};
  }
  void AddImage(const std::string& image, engine::Labels labels) {
    std::lock_guard lock(mu_);
    images_[image] = engine::ImageFacts{"sha256:" + image, std::move(labels)};
  }
  // While down, every call fails kUnavailable.
  void SetDown(bool down) { down_ = down; }

  bool Has(const std::string& id) const {
    std::lock_guard lock(mu_);
    return sandboxes_.contains(id);
  }
  // "launch <id>", "kill <id>", "remove <id>", "narrow <id>", "reattach <id>", in order.
  std::vector<std::string> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

  const std::string& name() const override { return name_; }
  std::string_view kind() const override { return "Fake"; }
  std::chrono::milliseconds call_timeout() const override { return std::chrono::seconds(30); }

  Status Ping(engine::Deadline /*deadline*/) const override { return Up(); }

  Result<engine::ImageFacts> CheckImage(const std::string& image,
                                        engine::Deadline /*deadline*/) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    std::lock_guard lock(mu_);
    auto it = images_.find(image);
    if (it == images_.end()) return Error(ErrorCode::kNotFound, "No such image: " + image);
    return it->second;
  }

  Result<engine::Launched> Launch(const engine::SandboxSpec& spec, engine::Deadline /*deadline*/,
                                  const std::atomic<bool>* cancel) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    if (cancel != nullptr && cancel->load()) {
      return Error(ErrorCode::kCancelled, std::string(engine::kLaunchCancelled));
    }
    std::lock_guard lock(mu_);
    const std::string id = "launched" + std::to_string(++launched_) + std::string(48, '0');
    engine::SandboxState state;
    state.status = "running";
    state.running = true;
    state.started_at = "t" + std::to_string(launched_);
    sandboxes_[id] = Held{engine::Listed{id, "running", 0, spec.labels, name_}, state};
    calls_.push_back("launch " + id);
    return engine::Launched{id, std::make_unique<FakeStream>()};
  }

  Result<std::unique_ptr<engine::AttachedStream>> Reattach(
      const std::string& id, engine::Deadline /*deadline*/) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    std::lock_guard lock(mu_);
    calls_.push_back("reattach " + id);
    if (!sandboxes_.contains(id)) return NoSuch(id);
    return std::unique_ptr<engine::AttachedStream>(std::make_unique<FakeStream>());
  }

  Status Narrow(const std::string& id, const engine::ResourceUpdate& /*update*/,
                engine::Deadline /*deadline*/) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    std::lock_guard lock(mu_);
    calls_.push_back("narrow " + id);
    if (!sandboxes_.contains(id)) return NoSuch(id);
    return OkStatus();
  }

  Result<engine::SandboxState> Inspect(const std::string& id,
                                       engine::Deadline /*deadline*/) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    std::lock_guard lock(mu_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return NoSuch(id);
    return it->second.state;
  }

  Status Kill(const std::string& id, engine::Deadline /*deadline*/) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    std::lock_guard lock(mu_);
    calls_.push_back("kill " + id);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return NoSuch(id);
    it->second.state.running = false;
    it->second.state.paused = false;
    it->second.state.status = "exited";
    it->second.state.exit_code = 137;
    it->second.listed.state = "exited";
    return OkStatus();
  }

  Status Remove(const std::string& id, engine::Deadline /*deadline*/) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    std::lock_guard lock(mu_);
    calls_.push_back("remove " + id);
    sandboxes_.erase(id);  // one already gone is removed too
    return OkStatus();
  }

  Result<std::vector<engine::Listed>> List(const engine::Labels& all_of,
                                           engine::Deadline /*deadline*/) const override {
    SANDBOX_RETURN_IF_ERROR(Up());
    std::lock_guard lock(mu_);
    std::vector<engine::Listed> out;
    for (const auto& [id, held] : sandboxes_) {
      bool all = true;
      for (const auto& [key, value] : all_of) {
        auto it = held.listed.labels.find(key);
        all = all && it != held.listed.labels.end() && it->second == value;
      }
      if (all) out.push_back(held.listed);
    }
    return out;
  }

 private:
  struct Held {
    engine::Listed listed;
    engine::SandboxState state;
  };

  Status Up() const {
    if (down_) return Error(ErrorCode::kUnavailable, "cannot reach the fake engine " + name_);
    return OkStatus();
  }
  static Error NoSuch(const std::string& id) {
    return Error(ErrorCode::kNotFound, "No such container: " + id);
  }

  const std::string name_;
  std::atomic<bool> down_{false};
  mutable std::mutex mu_;
  mutable std::map<std::string, Held> sandboxes_;
  std::map<std::string, engine::ImageFacts> images_;
  mutable std::vector<std::string> calls_;
  mutable int launched_ = 0;
};

}  // namespace sandbox::testing
