// Test doubles for the warm pool: a fake clock, a fake sandbox and a factory that counts every
// sandbox it made and which are still alive, so tests can assert max_total and "no leaks".
// Thread-safety: all of it may be used from the pool's threads and the test thread at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/pool/pooled_sandbox.h"

namespace sandbox::pool::testing {

// A steady clock that moves only when told to.
class FakeClock {
 public:
  Clock::time_point Now() const {
    return Clock::time_point{} + std::chrono::hours(1000) + offset();
  }
  void Advance(std::chrono::nanoseconds by) { offset_ns_ += by.count(); }

 private:
  std::chrono::nanoseconds offset() const { return std::chrono::nanoseconds{offset_ns_.load()}; }
  std::atomic<std::int64_t> offset_ns_{0};
};

class FakeFactory;

class FakeSandbox : public PooledSandbox {
 public:
  FakeSandbox(FakeFactory* factory, int id, Clock::time_point created)
      : factory_(factory), id_(id), created_(created) {}
  ~FakeSandbox() override;

  bool Healthy() override {
    ++health_checks_;
    return healthy_;
  }
  bool Reusable() const override { return reusable_; }
  bool Prepared() override {
    ++prepared_checks_;
    return prepared_;
  }
  int RunCount() const override { return runs_; }
  Clock::time_point CreatedAt() const override { return created_; }
  std::string Name() const override { return "fake-" + std::to_string(id_); }
  bool Lean() const override { return lean_; }

  int id() const { return id_; }
  // What a run would do to the sandbox.
  void Run() { ++runs_; }
  void set_runs(int runs) { runs_ = runs; }
  void set_healthy(bool healthy) { healthy_ = healthy; }
  void set_reusable(bool reusable) { reusable_ = reusable; }
  void set_prepared(bool prepared) { prepared_ = prepared; }
  void set_lean(bool lean) { lean_ = lean; }
  int health_checks() const { return health_checks_; }
  int prepared_checks() const { return prepared_checks_; }

 private:
  FakeFactory* factory_;
  const int id_;
  const Clock::time_point created_;
  std::atomic<int> runs_{0};
  std::atomic<bool> healthy_{true};
  std::atomic<bool> reusable_{true};
  std::atomic<bool> prepared_{true};
  std::atomic<bool> lean_{false};
  std::atomic<int> health_checks_{0};
  std::atomic<int> prepared_checks_{0};
};

class FakeFactory : public SandboxFactory<FakeSandbox> {
 public:
  explicit FakeFactory(const FakeClock* clock = nullptr) : clock_(clock) {}

  Result<std::unique_ptr<FakeSandbox>> CreateFor(const StartContext& context) override {
    {
      std::lock_guard lock(mu_);
      waiting_at_start_.push_back(context.behind_demand);
    }
    return Create();
  }

  Result<std::unique_ptr<FakeSandbox>> Create() override {
    std::unique_lock lock(mu_);
    ++attempts_;
    max_in_create_ = std::max(max_in_create_, ++in_create_);
    cv_.wait(lock, [this] { return !create_blocked_ && (!block_until_cancelled_ || cancelled_); });
    --in_create_;
    if (block_until_cancelled_) {
      return Error(ErrorCode::kCancelled, "the sandbox start was cancelled");
    }
    if (fail_) return Error(ErrorCode::kNotFound, "No such image: sandbox-mcp-python:broken");
    const int id = ++created_;
    ++live_;
    max_live_ = std::max(max_live_, live_);
    auto sandbox = std::make_unique<FakeSandbox>(this, id, clock_ ? clock_->Now() : Clock::now());
    alive_[id] = sandbox.get();
    lock.unlock();
    const auto delay = create_delay_.load();
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    return sandbox;
  }

  // Counted; only a Create() of BlockCreateUntilCancelled() honours it (then, as the harness
  // factory does, calls in flight give up and later ones fail at once). Otherwise the fake acts
  // as a factory that cannot cancel.
  void CancelStarts() override {
    std::lock_guard lock(mu_);
    ++cancel_calls_;
    cancelled_ = true;
    cv_.notify_all();
  }

  void OnDestroyed(int id) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !destroy_blocked_; });
    --live_;
    ++destroyed_;
    alive_.erase(id);
  }

  // Runs `fn` on a live sandbox by id under the factory's lock (so it cannot be destroyed
  // meanwhile); false if it is gone.
  template <typename Fn>
  bool WithSandbox(int id, Fn&& fn) {
    std::lock_guard lock(mu_);
    auto it = alive_.find(id);
    if (it == alive_.end()) return false;
    fn(*it->second);
    return true;
  }

  void set_fail(bool fail) {
    std::lock_guard lock(mu_);
    fail_ = fail;
  }
  void set_create_delay(std::chrono::milliseconds delay) { create_delay_ = delay; }
  void BlockCreate(bool blocked) {
    std::lock_guard lock(mu_);
    create_blocked_ = blocked;
    cv_.notify_all();
  }
  // Create() then blocks until CancelStarts() (a start that would take very long).
  void BlockCreateUntilCancelled() {
    std::lock_guard lock(mu_);
    block_until_cancelled_ = true;
  }
  void BlockDestroy(bool blocked) {
    std::lock_guard lock(mu_);
    destroy_blocked_ = blocked;
    cv_.notify_all();
  }

  int attempts() const { return Get(attempts_); }
  // StartContext::behind_demand of every start, in order.
  std::vector<bool> waiting_at_start() const {
    std::lock_guard lock(mu_);
    return waiting_at_start_;
  }
  int cancel_calls() const { return Get(cancel_calls_); }
  // The most Create() calls in flight at once.
  int max_in_create() const { return Get(max_in_create_); }
  int created() const { return Get(created_); }
  int destroyed() const { return Get(destroyed_); }
  int live() const { return Get(live_); }
  int max_live() const { return Get(max_live_); }
  bool alive(int id) const {
    std::lock_guard lock(mu_);
    return alive_.contains(id);
  }

 private:
  int Get(const int& field) const {
    std::lock_guard lock(mu_);
    return field;
  }

  const FakeClock* clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool fail_ = false;
  bool create_blocked_ = false;
  bool destroy_blocked_ = false;
  bool block_until_cancelled_ = false;
  bool cancelled_ = false;
  int cancel_calls_ = 0;
  std::atomic<std::chrono::milliseconds> create_delay_{std::chrono::milliseconds{0}};
  int attempts_ = 0;
  int in_create_ = 0;
  int max_in_create_ = 0;
  int created_ = 0;
  int destroyed_ = 0;
  int live_ = 0;
  int max_live_ = 0;
  std::map<int, FakeSandbox*> alive_;
  std::vector<bool> waiting_at_start_;
};

inline FakeSandbox::~FakeSandbox() { factory_->OnDestroyed(id_); }

// The lease is typed: a test reaches the fake without a cast.
inline FakeSandbox& AsFake(FakeSandbox* sandbox) { return *sandbox; }

}  // namespace sandbox::pool::testing
