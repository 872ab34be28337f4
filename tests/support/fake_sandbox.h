// FakeSandbox and FakeMaker: in-memory runner::Sandboxes for tests of the service layer
// (tests/unit/service), built into the real pools by service::BuildPools, without Docker. A
// FakeWorld is shared by every fake of a test: it counts starts and live sandboxes (so tests
// can assert that every sandbox is destroyed) and lets a test reach a live sandbox to break it.
//
// A fake run understands a few codes (anything else ends kOk, its code echoed on stdout):
//   "crash"       the sandbox is lost: verdict kInternal, no longer Reusable();
//   "limit kill"  the interpreter is restarted (verdict kMemory, session_reset, files cleared);
//   "sleep"       blocks until the run's cancel token fires (verdict kCancelled).
// Session files live in a map; GetFile of a file larger than max_bytes is kLimit, a missing
// one kNotFound.
//
// Thread-safety: a sandbox is used by one holder at a time (as real ones); FakeWorld's methods
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/runner/sandbox.h"
#include "sandbox/service/sandbox_pools.h"
#include "sandbox/service/session_record.h"

namespace sandbox::testing {

class FakeSandbox;

class FakeWorld {
 public:
  int started() const {
    std::lock_guard lock(mu_);
    return started_;
  }
  int live() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(alive_.size());
  }
  // Sandboxes destroyed after Sandbox::Leave() (their containers would run on).
  int left() const {
    std::lock_guard lock(mu_);
    return left_;
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
  // Starts fail (kUnavailable) while set.
  void set_fail_starts(bool fail) { fail_starts_ = fail; }
  bool fail_starts() const { return fail_starts_; }

  // Runs `fn` under the world's lock on the live sandbox serving `session_id`: the one made
  // for that id (with a restart grace), else the only sandbox a session has begun in; false
  // if there is none.
  bool WithSession(const std::string& session_id, const std::function<void(FakeSandbox&)>& fn);

  // Called by the fakes.
  int Register(FakeSandbox* sandbox) {
    std::lock_guard lock(mu_);
    alive_[++started_] = sandbox;
    return started_;
  }
  void Unregister(int id, bool left) {
    std::lock_guard lock(mu_);
    alive_.erase(id);
    if (left) ++left_;
  }

 private:
  mutable std::mutex mu_;
  int started_ = 0;
  std::map<int, FakeSandbox*> alive_;
  int left_ = 0;
  runner::ResumeInfo resume_;
  std::atomic<bool> fail_starts_{false};
};

class FakeSandbox final : public runner::Sandbox {
 public:
  FakeSandbox(FakeWorld& world, const runner::SandboxSetup& setup, std::string session_id)
      : world_(world),
        setup_(setup),
        id_(world.Register(this)),
        container_id_("fake" + std::to_string(id_) + std::string(60, '0')),
        session_id_(std::move(session_id)),
        created_(pool::Clock::now()) {}
  ~FakeSandbox() override { world_.Unregister(id_, left_); }
  FakeSandbox(const FakeSandbox&) = delete;
  FakeSandbox& operator=(const FakeSandbox&) = delete;

  exec::RunResult Run(const std::string& code, const std::vector<exec::InputFile>& files,
                      const runner::RunLimits& limits, exec::RunObserver& observer,
                      const exec::CancelToken& cancel) override {
    exec::RunResult result;
    result.pool = setup_.pool.name;
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

  bool Healthy() override { return Ping().ok(); }
  bool Reusable() const override { return !broken_; }
  int RunCount() const override { return runs_; }
  pool::Clock::time_point CreatedAt() const override { return created_; }
  std::string Name() const override { return "fake-" + std::to_string(id_); }

  // For tests.
  int id() const { return id_; }
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
  const runner::SandboxSetup& setup_;
  const int id_;
  const std::string container_id_;
  const std::string session_id_;
  const pool::Clock::time_point created_;
  std::atomic<bool> broken_{false};
  std::atomic<bool> break_on_file_op_{false};
  std::atomic<int> runs_{0};
  std::atomic<int> pings_{0};
  std::atomic<bool> begun_{false};
  std::atomic<bool> left_{false};
  std::string notice_;
  runner::RunLimits session_limits_;
  runner::RunLimits last_limits_;
  runner::SessionTerms terms_;
  runner::ResumeInfo resume_;
  std::map<std::string, std::string> files_;
};

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

// Makes FakeSandboxes of one pool, as HarnessSandboxMaker makes real ones: a session sandbox
// that may outlive its server is made for a fresh session id.
class FakeMaker final : public service::SandboxMaker {
 public:
  FakeMaker(FakeWorld& world, runner::SandboxSetup setup)
      : world_(world), setup_(std::move(setup)), limits_(setup_.pool.limits) {}

  Result<std::unique_ptr<runner::Sandbox>> Create() override {
    std::string id;
    if (setup_.session && setup_.watchdog.count() > 0) id = service::NewSessionId(setup_.replica);
    return Start(std::move(id));
  }
  Result<std::unique_ptr<runner::Sandbox>> StartForSession(const std::string& session_id) override {
    return Start(session_id);
  }
  Result<std::unique_ptr<runner::Sandbox>> Adopt(const std::string& container_id) override {
    (void)container_id;
    auto sandbox = std::make_unique<FakeSandbox>(world_, setup_, std::string());
    sandbox->set_resume(world_.resume());
    return std::unique_ptr<runner::Sandbox>(std::move(sandbox));
  }
  void Remove(const std::string& container_id) override {
    std::lock_guard lock(mu_);
    removed_.push_back(container_id);
  }
  config::Limits limits() const override {
    std::lock_guard lock(mu_);
    return limits_;
  }
  void SetLimits(const config::Limits& limits) override {
    std::lock_guard lock(mu_);
    limits_ = limits;
  }
  std::string python_version() const override { return "3.11"; }

  std::vector<std::string> removed() const {
    std::lock_guard lock(mu_);
    return removed_;
  }

 private:
  Result<std::unique_ptr<runner::Sandbox>> Start(std::string session_id) {
    if (world_.fail_starts()) return Error(ErrorCode::kUnavailable, "the engine is down");
    return std::unique_ptr<runner::Sandbox>(
        std::make_unique<FakeSandbox>(world_, setup_, std::move(session_id)));
  }

  FakeWorld& world_;
  const runner::SandboxSetup setup_;  // outlives its sandboxes: the maker outlives its pool
  mutable std::mutex mu_;
  config::Limits limits_;
  std::vector<std::string> removed_;
};

// The MakerFactory of FakeMakers in `world`.
inline service::MakerFactory FakeMakers(FakeWorld& world) {
  return [&world](runner::SandboxSetup setup) -> std::unique_ptr<service::SandboxMaker> {
    return std::make_unique<FakeMaker>(world, std::move(setup));
  };
}

}  // namespace sandbox::testing
