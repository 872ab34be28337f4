// FakeService: an ExecutionService for protocol tests, without Docker. Each Run() calls the
// behaviour set by the test (default: an ok run printing "hello"), records the request, and can
// block until its CancelToken fires, announcing when it started so a test can cancel at the right
// moment without sleeping.
// Thread-safety: Run() and Info() may be called from many threads; the setters before the runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "sandbox/exec/execution_service.h"

namespace sandbox::mcp::testing {

class FakeService final : public exec::ExecutionService {
 public:
  using Behaviour = std::function<Result<exec::RunResult>(
      const exec::RunRequest&, exec::RunObserver&, const exec::CancelToken&)>;

  void SetBehaviour(Behaviour behaviour) { behaviour_ = std::move(behaviour); }

  // A behaviour that announces its start, then waits for cancellation (at most `limit`) and
  // returns a cancelled run.
  Behaviour BlockUntilCancelled(std::chrono::seconds limit = std::chrono::seconds(30)) {
    return [this, limit](const exec::RunRequest&, exec::RunObserver& observer,
                         const exec::CancelToken& cancel) -> Result<exec::RunResult> {
      auto done = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
      cancel.OnCancel([done] {
        std::lock_guard lock(done->first);
        done->second.notify_all();
      });
      observer.OnOutput(exec::Stream::kStdout, "started\n");
      MarkStarted();
      {
        std::unique_lock lock(done->first);
        done->second.wait_for(lock, limit, [&] { return cancel.IsCancelled(); });
      }
      {
        std::lock_guard lock(mu_);
        saw_cancel_ = cancel.IsCancelled();
      }
      cv_.notify_all();
      exec::RunResult result;
      result.verdict = cancel.IsCancelled() ? exec::Verdict::kCancelled : exec::Verdict::kTimeout;
      return result;
    };
  }

  Result<exec::RunResult> Run(const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    if (behaviour_) return behaviour_(request, observer, cancel);
    observer.OnOutput(exec::Stream::kStdout, "hello\n");
    exec::RunResult result;
    result.verdict = exec::Verdict::kOk;
    result.exit_code = 0;
    result.stdout_text = "hello\n";
    result.duration_ms = 5;
    return result;
  }

  Result<std::string> PoolForExecutable(const std::string&) override {
    return Error(ErrorCode::kInvalidArgument, "executable_path: this fake has no interpreters");
  }

  Result<exec::ServiceInfo> Info() override {
    exec::ServiceInfo info;
    info.info = info_;
    return info;
  }
  void SetInfo(nlohmann::json info) { info_ = std::move(info); }

  void MarkStarted() {
    std::lock_guard lock(mu_);
    ++started_;
    cv_.notify_all();
  }
  // Blocks until `n` runs have started (false after `limit`).
  bool WaitStarted(int n = 1, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return started_ >= n; });
  }
  // Blocks until a blocked run has observed its cancellation.
  bool WaitCancelled(std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return saw_cancel_; });
  }
  std::vector<exec::RunRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  Behaviour behaviour_;
  nlohmann::json info_ = {{"python", "3.11.2"},
                          {"packages", {{"numpy", "1.24.2"}}},
                          {"network", "none"},
                          {"pools", nlohmann::json::array()}};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<exec::RunRequest> requests_;
  int started_ = 0;
  bool saw_cancel_ = false;
};

}  // namespace sandbox::mcp::testing
