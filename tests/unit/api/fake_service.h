// A scriptable ExecutionService for the HTTP API's unit tests: each test sets `script`, which
// plays the engine (calls the observer, waits on the cancel token, returns a result or error).
// Thread-safety: Run() may be called from many threads; `script` is set before requests.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "sandbox/exec/execution_service.h"

namespace sandbox::api::testing {

class FakeService final : public exec::ExecutionService {
 public:
  using Script = std::function<Result<exec::RunResult>(const exec::RunRequest&, exec::RunObserver&,
                                                       const exec::CancelToken&)>;

  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
      ++running_;
    }
    cv_.notify_all();
    auto result = script ? script(request, observer, cancel) : Result<exec::RunResult>(Ok());
    {
      std::lock_guard lock(mu_);
      --running_;
      if (cancel.IsCancelled()) ++cancelled_;
    }
    cv_.notify_all();
    return result;
  }
  Result<exec::ServiceInfo> Info() override { return exec::ServiceInfo{}; }
  // `executables` maps interpreter paths to pools (set before the runs).
  Result<std::string> PoolForExecutable(const std::string& path) override {
    auto it = executables.find(path);
    if (it == executables.end()) {
      return Error(ErrorCode::kInvalidArgument,
                   "executable_path: \"" + path + "\" is not an interpreter of this server");
    }
    return it->second;
  }
  std::map<std::string, std::string> executables = {
      {"/snekbin/python/default/bin/python", "default"},
      {"/snekbin/python/3.11/bin/python", "default"},
      {"/snekbin/python/3.14/bin/python", "py314"}};

  std::vector<exec::RunRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int cancelled() const {
    std::lock_guard lock(mu_);
    return cancelled_;
  }
  // Waits until `n` runs have begun.
  bool WaitForRuns(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }
  // Waits until no run is in progress and at least `n` ended cancelled.
  bool WaitForCancelled(int n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return running_ == 0 && cancelled_ >= n; });
  }

  static exec::RunResult Ok(std::string out = "", std::string err = "") {
    exec::RunResult r;
    r.verdict = exec::Verdict::kOk;
    r.exit_code = 0;
    r.stdout_text = std::move(out);
    r.stderr_text = std::move(err);
    r.pool = "default";
    return r;
  }

  // Blocks until `cancel` fires (or `limit` passes); true when it fired.
  static bool WaitForCancel(const exec::CancelToken& cancel, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!cancel.IsCancelled() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return cancel.IsCancelled();
  }

  Script script;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<exec::RunRequest> requests_;
  int running_ = 0;
  int cancelled_ = 0;
};

}  // namespace sandbox::api::testing
