// FakeSandbox: an in-memory runner::Sandbox (and so a pool::PooledSandbox), without Docker, for
// the tests of the warm pool (tests/unit/pool, made by FakeFactory, fake_factory.h) and of the
// service layer (tests/unit/service, made by FakeMaker, fake_maker.h). A FakeWorld is shared by
// every fake of a test: it counts starts and live sandboxes (so tests can assert max_total and
// that every sandbox is destroyed), can hold destructions back, and lets a test reach a live
// sandbox to break it.
//
// A fake run understands a few codes (anything else ends kOk, its code echoed on stdout):
//   "crash"       the sandbox is lost: verdict kInternal, no longer Reusable();
//   "limit kill"  the interpreter is restarted (verdict kMemory, session_reset, files cleared);
//   "sleep"       blocks until the run's cancel token fires (verdict kCancelled).
// Session files live in a map; GetFile of a file larger than max_bytes is kLimit, a missing
// one kNotFound. What the pool asks (Healthy, Reusable, Prepared, Lean) the test sets.
//
// Thread-safety: a sandbox is used by one holder at a time (as real ones), its knobs may be set
// from any thread; FakeWorld's methods from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/pool/pooled_sandbox.h"
#include "sandbox/runner/sandbox.h"

namespace sandbox::testing {

class FakeSandbox;

class FakeWorld {
 public:
  // Sandboxes made so far (their ids are 1, 2, ...).
  int started() const {
    std::lock_guard lock(mu_);
    return started_;
  }
  int live() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(alive_.size());
  }
  // The most sandboxes alive at once.
  int max_live() const {
    std::lock_guard lock(mu_);
    return max_live_;
  }
  int destroyed() const {
    std::lock_guard lock(mu_);
    return destroyed_;
  }
  // Sandboxes destroyed after Sandbox::Leave() (their containers would run on).
  int left() const {
    std::lock_guard lock(mu_);
    return left_;
  }
  bool alive(int id) const {
    std::lock_guard lock(mu_);
    return alive_.contains(id);
  }
  // What adopted sandboxes answer to Resume().
  void set_resume(runner::ResumeInfo resume) {
    std::lock_guard lock(mu_);
    resume_ = std::move(resume);
  }
  runner::ResumeInfo resume() const {
    std::lock_guard lock(mu_);
    return resume_;
  }
  // Starts fail (kUnavailable) while set (FakeMaker).
  void set_fail_starts(bool fail) { fail_starts_ = fail; }
  bool fail_starts() const { return fail_starts_; }
  // While set, destroying a sandbox blocks (a removal that takes long).
  void BlockDestroy(bool blocked) {
    {
      std::lock_guard lock(mu_);
      destroy_blocked_ = blocked;
    }
    cv_.notify_all();
  }

  // Runs `fn` under the world's lock on the live sandbox `id` (so it cannot be destroyed
  // meanwhile); false if it is gone.
  bool WithSandbox(int id, const std::function<void(FakeSandbox&)>& fn);
  // Runs `fn` under the world's lock on the live sandbox serving `session_id`: the one made
  // for that id (with a restart grace), else the only sandbox a session has begun in; false
  // if there is none.
  bool WithSession(const std::string& session_id, const std::function<void(FakeSandbox&)>& fn);

  // Called by the fakes.
  int Register(FakeSandbox* sandbox) {
    std::lock_guard lock(mu_);
    alive_[++started_] = sandbox;
    max_live_ = std::max(max_live_, static_cast<int>(alive_.size()));
    return started_;
  }
  void Unregister(int id, bool left) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !destroy_blocked_; });
    alive_.erase(id);
    ++destroyed_;
    if (left) ++left_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  int max_live_ = 0;
  int destroyed_ = 0;
  int left_ = 0;
  bool destroy_blocked_ = false;
  std::map<int, FakeSandbox*> alive_;
  runner::ResumeInfo resume_;
  std::atomic<bool> fail_starts_{false};
};

class FakeSandbox final : public runner::Sandbox {
 public:
  // `pool`: the pool name results carry; `session_id`: the session it was started for (empty:
  // none); `created`: its CreatedAt() (a FakeClock's time in the pool's tests).
  FakeSandbox(FakeWorld& world, std::string pool, std::string session_id,
              pool::Clock::time_point created = pool::Clock::now())
      : world_(world),
        pool_(std::move(pool)),
        id_(world.Register(this)),
        container_id_("fake" + std::to_string(id_) + std::string(60, '0')),
        session_id_(std::move(session_id)),
        created_(created) {}
  ~FakeSandbox() override { world_.Unregister(id_, left_); }
  FakeSandbox(const FakeSandbox&) = delete;
  FakeSandbox& operator=(const FakeSandbox&) = delete;

  exec::RunResult Run(const std::string& code, const std::vector<exec::InputFile>& files,
                      const runner::RunLimits& limits, exec::RunObserver& observer,
                      const exec::CancelToken& cancel) override {
    exec::RunResult result;
    result.pool = pool_;
    result.sandbox_id = container_id_.substr(0, 12);
    if (broken_) {
      result.detail = "the sandbox is not usable";
      return result;
    }
    last_limits_ = limits;
    for (const auto& f : files) files_[f.path] = f.content;
    ++runs_;
    observer.OnStarted();
    if (code == "crash") {
      broken_ = true;
      result.detail = "the sandbox exited during the run";
      return result;
    }
    if (code == "limit kill") {
      files_.clear();
      result.verdict = exec::Verdict::kMemory;
      result.session_reset = true;
      result.detail = "the run exceeded its memory limit";
      return result;
    }
    if (code == "sleep") {
      while (!cancel.IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      result.verdict = exec::Verdict::kCancelled;
      return result;
    }
    result.verdict = exec::Verdict::kOk;
    result.exit_code = 0;
    result.stdout_text = code;
    observer.OnOutput(exec::Stream::kStdout, code);
    return result;
  }

  Result<runner::PingInfo> Ping() override {
    ++pings_;
    if (broken_) return Error(ErrorCode::kUnavailable, "the sandbox does not answer");
    return runner::PingInfo{std::int64_t{1} << 20};
  }
  const std::string& container_id() const override { return container_id_; }
  const std::string& engine() const override { return engine_; }
  const std::string& session_id() const override { return session_id_; }

  Status BeginSession(const runner::RunLimits& limits, const runner::SessionTerms& terms) override {
    if (broken_) return Error(ErrorCode::kUnavailable, "the session's sandbox is not usable");
    session_limits_ = limits;
    terms_ = terms;
    begun_ = true;
    return OkStatus();
  }
  Result<runner::ResumeInfo> Resume() override {
    if (broken_) return Error(ErrorCode::kUnavailable, "the session's sandbox is not usable");
    return resume_;
  }
  Result<std::vector<exec::SessionFile>> PutFiles(
      const std::vector<exec::InputFile>& files) override {
    SANDBOX_RETURN_IF_ERROR(Usable());
    std::vector<exec::SessionFile> out;
    for (const auto& f : files) {
      files_[f.path] = f.content;
      out.push_back({f.path, static_cast<std::int64_t>(f.content.size()), "text/plain", 0});
    }
    return out;
  }
  Result<exec::SessionFileList> ListFiles() override {
    SANDBOX_RETURN_IF_ERROR(Usable());
    exec::SessionFileList list;
    for (const auto& [path, content] : files_) {
      list.files.push_back({path, static_cast<std::int64_t>(content.size()), "text/plain", 0});
    }
    return list;
  }
  Result<exec::OutputFile> GetFile(const std::string& path, std::int64_t max_bytes) override {
    SANDBOX_RETURN_IF_ERROR(Usable());
    auto it = files_.find(path);
    if (it == files_.end()) return Error(ErrorCode::kNotFound, "no such file: " + path);
    const auto size = static_cast<std::int64_t>(it->second.size());
    if (size > max_bytes) {
      return Error(ErrorCode::kLimit, path + " is " + std::to_string(size) +
                                          " bytes, more than the limit of " +
                                          std::to_string(max_bytes) + " bytes");
    }
    return exec::OutputFile{path, size, "text/plain", it->second};
  }
  Status DeleteFile(const std::string& path) override {
    SANDBOX_RETURN_IF_ERROR(Usable());
    if (files_.erase(path) == 0) return Error(ErrorCode::kNotFound, "no such file: " + path);
    return OkStatus();
  }
  std::string TakeSessionNotice() override { return std::exchange(notice_, {}); }
  void Leave() override {
    left_ = true;
    broken_ = true;
  }

  // pool::PooledSandbox.
  bool Healthy() override {
    ++health_checks_;
    return healthy_ && Ping().ok();
  }
  bool Reusable() const override { return reusable_ && !broken_; }
  bool Prepared() override {
    ++prepared_checks_;
    return prepared_;
  }
  bool Lean() const override { return lean_; }
  int RunCount() const override { return runs_; }
  pool::Clock::time_point CreatedAt() const override { return created_; }
  std::string Name() const override { return "fake-" + std::to_string(id_); }

  // For tests.
  int id() const { return id_; }
  // What a run does to the sandbox, for the pool's tests (which run nothing).
  void RecordRun() { ++runs_; }
  void set_runs(int runs) { runs_ = runs; }
  void set_healthy(bool healthy) { healthy_ = healthy; }
  void set_reusable(bool reusable) { reusable_ = reusable; }
  void set_prepared(bool prepared) { prepared_ = prepared; }
  void set_lean(bool lean) { lean_ = lean; }
  int health_checks() const { return health_checks_; }
  int prepared_checks() const { return prepared_checks_; }
  // The container dies from outside (killed, removed): every later call fails.
  void Break() { broken_ = true; }
  // The interpreter died while idle; the next call learns it (Sandbox::TakeSessionNotice).
  void RestartWhileIdle(std::string notice) {
    files_.clear();
    notice_ = std::move(notice);
  }
  // A file operation that loses the sandbox.
  void BreakOnNextFileOp() { break_on_file_op_ = true; }
  void set_resume(runner::ResumeInfo resume) { resume_ = std::move(resume); }
  bool begun() const { return begun_; }
  bool left() const { return left_; }
  int pings() const { return pings_; }
  const runner::RunLimits& session_limits() const { return session_limits_; }
  const runner::RunLimits& last_limits() const { return last_limits_; }
  const runner::SessionTerms& terms() const { return terms_; }
  const std::map<std::string, std::string>& files() const { return files_; }

 private:
  Status Usable() {
    if (break_on_file_op_) broken_ = true;
    if (broken_) return Error(ErrorCode::kUnavailable, "the session's sandbox stopped answering");
    return OkStatus();
  }

  FakeWorld& world_;
  const std::string pool_;
  const int id_;
  const std::string container_id_;
  const std::string engine_ = "fake";
  const std::string session_id_;
  const pool::Clock::time_point created_;
  std::atomic<bool> broken_{false};
  std::atomic<bool> break_on_file_op_{false};
  std::atomic<int> runs_{0};
  std::atomic<int> pings_{0};
  std::atomic<bool> begun_{false};
  std::atomic<bool> left_{false};
  std::atomic<bool> healthy_{true};
  std::atomic<bool> reusable_{true};
  std::atomic<bool> prepared_{true};
  std::atomic<bool> lean_{false};
  std::atomic<int> health_checks_{0};
  std::atomic<int> prepared_checks_{0};
  std::string notice_;
  runner::RunLimits session_limits_;
  runner::RunLimits last_limits_;
  runner::SessionTerms terms_;
  runner::ResumeInfo resume_;
  std::map<std::string, std::string> files_;
};

inline bool FakeWorld::WithSandbox(int id, const std::function<void(FakeSandbox&)>& fn) {
  std::lock_guard lock(mu_);
  auto it = alive_.find(id);
  if (it == alive_.end()) return false;
  fn(*it->second);
  return true;
}

inline bool FakeWorld::WithSession(const std::string& session_id,
                                   const std::function<void(FakeSandbox&)>& fn) {
  std::lock_guard lock(mu_);
  FakeSandbox* only = nullptr;
  int begun = 0;
  for (auto& [id, sandbox] : alive_) {
    if (!sandbox->begun()) continue;
    if (sandbox->session_id() == session_id) {
      fn(*sandbox);
      return true;
    }
    ++begun;
    only = sandbox;
  }
  if (begun != 1) return false;
  fn(*only);
  return true;
}

}  // namespace sandbox::testing
