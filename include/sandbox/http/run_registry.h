// RunRegistry: the runs an HTTP front end has in progress, each by its cancel token, so that
// shutdown can refuse new runs and cancel the running ones at once. RunRegistry::Entry holds a
// run's place for its lifetime.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <set>

#include "sandbox/exec/cancel_token.h"

namespace sandbox::http {

class RunRegistry {
 public:
  // A fresh token registered as running, or nullptr once shut down.
  std::shared_ptr<exec::CancelToken> Add();
  void Remove(const std::shared_ptr<exec::CancelToken>& token);
  // Refuses later Add()s and cancels every registered run. Idempotent.
  void Shutdown();
  std::size_t size() const;

  // Registers a run for as long as it lives (shareable, e.g. with a stream's thread).
  class Entry {
   public:
    explicit Entry(std::shared_ptr<RunRegistry> registry)
        : registry_(std::move(registry)), token_(registry_->Add()) {}
    ~Entry() {
      if (token_) registry_->Remove(token_);
    }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    // False when the registry had shut down: the run must not start.
    bool ok() const { return token_ != nullptr; }
    exec::CancelToken& token() const { return *token_; }
    const std::shared_ptr<exec::CancelToken>& shared_token() const { return token_; }

   private:
    std::shared_ptr<RunRegistry> registry_;
    std::shared_ptr<exec::CancelToken> token_;
  };

 private:
  mutable std::mutex mu_;
  bool shutting_down_ = false;
  std::set<std::shared_ptr<exec::CancelToken>> active_;
};

}  // namespace sandbox::http
