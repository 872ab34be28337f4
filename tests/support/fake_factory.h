// The warm pool's test doubles: a fake clock, and a pool::SandboxFactory of FakeSandboxes
// (fake_sandbox.h) that can fail, stall or be cancelled, and records what the pool asked of it.
// Its FakeWorld counts every sandbox it made and which are still alive, so tests can assert
// max_total and "no leaks".
// Thread-safety: all of it may be used from the pool's threads and the test thread at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/pool/pooled_sandbox.h"
#include "support/fake_sandbox.h"

namespace sandbox::testing {

// A steady clock that moves only when told to.
class FakeClock {
 public:
  pool::Clock::time_point Now() const {
    return pool::Clock::time_point{} + std::chrono::hours(1000) + offset();
  }
  void Advance(std::chrono::nanoseconds by) { offset_ns_ += by.count(); }

 private:
  std::chrono::nanoseconds offset() const { return std::chrono::nanoseconds{offset_ns_.load()}; }
  std::atomic<std::int64_t> offset_ns_{0};
};

class FakeFactory : public pool::SandboxFactory<FakeSandbox> {
 public:
  // Sandboxes are created at `clock`'s time (null: the real clock).
  explicit FakeFactory(const FakeClock* clock = nullptr) : clock_(clock) {}

  Result<std::unique_ptr<FakeSandbox>> CreateFor(const pool::StartContext& context) override {
    {
      std::lock_guard lock(mu_);
      waiting_at_start_.push_back(context.behind_demand);
    }
    return Create();
  }

  Result<std::unique_ptr<FakeSandbox>> Create() override {
    {
      std::unique_lock lock(mu_);
      ++attempts_;
      max_in_create_ = std::max(max_in_create_, ++in_create_);
      cv_.wait(lock,
               [this] { return !create_blocked_ && (!block_until_cancelled_ || cancelled_); });
      --in_create_;
      if (block_until_cancelled_) {
        return Error(ErrorCode::kCancelled, "the sandbox start was cancelled");
      }
      if (fail_) return Error(ErrorCode::kNotFound, "No such image: sandbox-mcp-python:broken");
    }
    auto sandbox = std::make_unique<FakeSandbox>(world_, "default", std::string(),
                                                 clock_ ? clock_->Now() : pool::Clock::now());
    const auto delay = create_delay_.load();
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    return sandbox;
  }

  // Counted; only a Create() of BlockCreateUntilCancelled() honours it (then, as the harness
  // factory does, calls in flight give up and later ones fail at once). Otherwise the fake acts
  // as a factory that cannot cancel.
  void CancelStarts() override {
    {
      std::lock_guard lock(mu_);
      ++cancel_calls_;
      cancelled_ = true;
    }
    cv_.notify_all();
  }

  // The sandboxes this factory made.
  FakeWorld& world() { return world_; }
  // Runs `fn` on a live sandbox by id (so it cannot be destroyed meanwhile); false if it is gone.
  bool WithSandbox(int id, const std::function<void(FakeSandbox&)>& fn) {
    return world_.WithSandbox(id, fn);
  }

  void set_fail(bool fail) {
    std::lock_guard lock(mu_);
    fail_ = fail;
  }
  void set_create_delay(std::chrono::milliseconds delay) { create_delay_ = delay; }
  void BlockCreate(bool blocked) {
    {
      std::lock_guard lock(mu_);
      create_blocked_ = blocked;
    }
    cv_.notify_all();
  }
  // Create() then blocks until CancelStarts() (a start that would take very long).
  void BlockCreateUntilCancelled() {
    std::lock_guard lock(mu_);
    block_until_cancelled_ = true;
  }
  void BlockDestroy(bool blocked) { world_.BlockDestroy(blocked); }

  int attempts() const { return Get(attempts_); }
  // StartContext::behind_demand of every start, in order.
  std::vector<bool> waiting_at_start() const {
    std::lock_guard lock(mu_);
    return waiting_at_start_;
  }
  int cancel_calls() const { return Get(cancel_calls_); }
  // The most Create() calls in flight at once.
  int max_in_create() const { return Get(max_in_create_); }
  int created() const { return world_.started(); }
  int destroyed() const { return world_.destroyed(); }
  int live() const { return world_.live(); }
  int max_live() const { return world_.max_live(); }
  bool alive(int id) const { return world_.alive(id); }

 private:
  int Get(const int& field) const {
    std::lock_guard lock(mu_);
    return field;
  }

  const FakeClock* clock_;
  FakeWorld world_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool fail_ = false;
  bool create_blocked_ = false;
  bool block_until_cancelled_ = false;
  bool cancelled_ = false;
  int cancel_calls_ = 0;
  std::atomic<std::chrono::milliseconds> create_delay_{std::chrono::milliseconds{0}};
  int attempts_ = 0;
  int in_create_ = 0;
  int max_in_create_ = 0;
  std::vector<bool> waiting_at_start_;
};

// The lease is typed: a test reaches the fake without a cast.
inline FakeSandbox& AsFake(FakeSandbox* sandbox) { return *sandbox; }

}  // namespace sandbox::testing
