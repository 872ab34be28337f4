// A one-shot cancellation signal shared between the caller of a run and the engine.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace sandbox::exec {

class CancelToken {
 public:
  CancelToken() = default;
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Fires once; later calls do nothing. Callbacks run on the cancelling thread.
  void Cancel() {
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard lock(mu_);
      if (cancelled_.exchange(true)) return;
      callbacks.swap(callbacks_);
    }
    for (auto& cb : callbacks) cb();
  }

  bool IsCancelled() const { return cancelled_.load(); }

  // Runs `cb` when the token fires (at once if it already has). Callbacks are never removed,
  // so they must stay valid for the token's life (capture shared state, not stack references
  // that die before the token).
  void OnCancel(std::function<void()> cb) const {
    {
      std::lock_guard lock(mu_);
      if (!cancelled_.load()) {
        callbacks_.push_back(std::move(cb));
        return;
      }
    }
    cb();
  }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> cancelled_{false};
  mutable std::vector<std::function<void()>> callbacks_;
};

}  // namespace sandbox::exec
