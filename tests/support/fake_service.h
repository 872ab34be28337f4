// FakeService: an exec::ExecutionService for the tests of the protocol layers (MCP, its
// transports, the HTTP API), without Docker. Each Run() records the request and plays the
// behaviour the test set (default: an ok run that prints "hello"), which may call the observer,
// wait on the cancel token and return a result or an error. The waits let a test act at the right
// moment without sleeping: WaitForRuns (Run() was called), WaitStarted (a behaviour announced its
// start with MarkStarted, as BlockUntilCancelled does after its first output) and
// WaitForCancelled (runs ended cancelled). PoolForExecutable answers from `executables`, Snekbox's
// interpreter paths.
// Thread-safety: Run(), Info() and the waits may be called from many threads; SetBehaviour,
// SetInfo and `executables` before the runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/exec/execution_service.h"

namespace sandbox::testing {

class FakeService final : public exec::ExecutionService {
 public:
  using Behaviour = std::function<Result<exec::RunResult>(
      const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&)>;

  void SetBehaviour(Behaviour behaviour) { behaviour_ = std::move(behaviour); }

  // A behaviour that prints "started", announces its start (MarkStarted), then waits for
  // cancellation (at most `limit`) and returns a cancelled run (a timeout after `limit`).
  Behaviour BlockUntilCancelled(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    return [this, limit](const exec::RunRequest&, exec::RunObserver& observer,
                         const exec::CancelToken& cancel) -> Result<exec::RunResult> {
      observer.OnOutput(exec::Stream::kStdout, "started\n");
      MarkStarted();
      exec::RunResult result;
      result.verdict =
          WaitForCancel(cancel, limit) ? exec::Verdict::kCancelled : exec::Verdict::kTimeout;
      return result;
    };
  }

  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
      ++running_;
    }
    cv_.notify_all();
    Result<exec::RunResult> result =
        behaviour_ ? behaviour_(request, observer, cancel) : Hello(observer);
    {
      std::lock_guard lock(mu_);
      --running_;
      if (cancel.IsCancelled()) ++cancelled_;
    }
    cv_.notify_all();
    return result;
  }

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

  Result<exec::ServiceInfo> Info() override {
    exec::ServiceInfo info;
    info.info = info_;
    return info;
  }
  void SetInfo(nlohmann::json info) { info_ = std::move(info); }

  // Called by a behaviour once its run has begun (after its first output, say).
  void MarkStarted() {
    {
      std::lock_guard lock(mu_);
      ++started_;
    }
    cv_.notify_all();
  }

  std::vector<exec::RunRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int cancelled() const {
    std::lock_guard lock(mu_);
    return cancelled_;
  }

  // Blocks until Run() has been called `n` times (false after `limit`).
  bool WaitForRuns(std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return requests_.size() >= n; });
  }
  // Blocks until `n` runs have announced their start (MarkStarted).
  bool WaitStarted(int n = 1, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return started_ >= n; });
  }
  // Blocks until no run is in progress and at least `n` ended with their token cancelled.
  bool WaitForCancelled(int n = 1, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return running_ == 0 && cancelled_ >= n; });
  }

  // An ok run with this output, of the pool "default".
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
    // Shared with the token's callback, which may run after this returns.
    auto fired = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
    cancel.OnCancel([fired] {
      std::lock_guard lock(fired->first);
      fired->second.notify_all();
    });
    std::unique_lock lock(fired->first);
    return fired->second.wait_for(lock, limit, [&] { return cancel.IsCancelled(); });
  }

 private:
  // The default behaviour: "hello" printed, ok.
  static Result<exec::RunResult> Hello(exec::RunObserver& observer) {
    observer.OnOutput(exec::Stream::kStdout, "hello\n");
    exec::RunResult result;
    result.verdict = exec::Verdict::kOk;
    result.exit_code = 0;
    result.stdout_text = "hello\n";
    result.duration_ms = 5;
    return result;
  }

  Behaviour behaviour_;
  nlohmann::json info_ = {{"python", "3.11.2"},
                          {"packages", {{"numpy", "1.24.2"}}},
                          {"network", "none"},
                          {"pools", nlohmann::json::array()}};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<exec::RunRequest> requests_;
  int running_ = 0;
  int started_ = 0;
  int cancelled_ = 0;
};

}  // namespace sandbox::testing
