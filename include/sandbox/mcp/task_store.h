// TaskStore: the tasks of MCP's tasks extension (io.modelcontextprotocol/tasks, 2026-07-28). A
// tool call that the client lets become a task returns at once with the task's id; the run goes
// on in the background, on a thread of the store, and the client polls tasks/get for its status,
// its live output and, once it ended, its full result. The run belongs to the task, not to the
// HTTP request that started it: closing that request's stream does not cancel it; tasks/cancel
// and the server's shutdown do.
//
// A task belongs to the principal that created it: every lookup compares principals, and another
// principal's id is answered exactly like an unknown one. Ids are 128 random bits. A task stays
// readable for ttl after its creation (a finished one is forgotten after that; one still running
// is kept until it ends). Tasks live in memory: a restart forgets them (their ids then get the
// unknown-task error, which the extension allows).
//
// Kept results are bounded in bytes (issue 34, docs/memory-budget.md): each finished task's
// result (or error) counts by the size of its JSON against its principal's bound and the
// server's. Keeping one more past either evicts the oldest kept results first (the principal's
// own for its bound, anyone's for the server's); an evicted task stays listed and tasks/get
// answers it as failed with an error that says its result was evicted and by which bound. A
// result larger than the per-principal bound is not kept at all (the same answer).
// Thread-safety: every method of both classes may be called from any thread.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/exec/cancel_token.h"
#include "sandbox/mcp/task_group.h"

namespace sandbox::mcp {

struct TaskOptions {
  // How long a task stays readable after its creation (its ttlMs).
  std::chrono::milliseconds ttl{std::chrono::hours(1)};
  std::chrono::milliseconds poll_interval{1000};  // the pollIntervalMs suggested to clients
  std::size_t max_running_per_principal = 8;      // working or waiting for input, per principal
  std::size_t max_per_principal = 100;            // kept per principal, finished ones included
  std::size_t max_running = 64;                   // running in the whole server (one thread each)
  std::size_t live_output_bytes = 64 << 10;       // the tail of a running task's output kept
  // Finished results kept, in bytes of their JSON (tasks.max_result_bytes_per_principal,
  // tasks.max_result_bytes).
  std::int64_t max_result_bytes_per_principal = 128LL << 20;
  std::int64_t max_result_bytes = 512LL << 20;
  // The clock for createdAt and expiry; the system clock when unset (tests pass a fake).
  std::function<std::chrono::system_clock::time_point()> now;
  // server.replica: task ids start with "<replica>-" (core/replica_id.h); "": no prefix.
  std::string replica;
};

enum class TaskStatus { kWorking, kInputRequired, kCompleted, kCancelled, kFailed };

// The kept results, for /metrics.
struct KeptResultStats {
  std::int64_t bytes = 0;           // kept now, all principals
  std::int64_t max_bytes = 0;       // tasks.max_result_bytes
  std::uint64_t evicted_total = 0;  // results evicted (or not kept) since start
};
std::string_view TaskStatusName(TaskStatus status);

class Task {
 public:
  Task(std::string id, std::string principal, std::chrono::system_clock::time_point created,
       TaskOptions options);
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  const std::string& id() const { return id_; }
  const std::string& principal() const { return principal_; }
  // Fires on tasks/cancel and at shutdown; the run stops on it.
  const exec::CancelToken& cancel() const { return cancel_; }

  // ---- the run's side ----
  // Output of the run, kept as a bounded tail for tasks/get.
  void AppendOutput(std::string_view text);
  // Asks the client (input_required, with these requests added to the pending ones) and waits
  // until every key of `requests` is answered, the task is cancelled or `wait` passes. Returns the
  // answers by key; a key left unanswered is missing from it.
  nlohmann::json AwaitInput(const nlohmann::json& requests, std::chrono::milliseconds wait);
  // Asks the client for `key` (input_required) without waiting: `on_answer` gets the client's
  // answer once tasks/update brings it, or null when the task ends first. It runs once, on the
  // answering (or ending) thread, outside the task's lock. A key already asked is refused
  // (on_answer gets null at once).
  void AskInput(const std::string& key, nlohmann::json request,
                std::function<void(const nlohmann::json& answer)> on_answer);
  // The run ended with a CallToolResult (isError or not): completed, or cancelled when a cancel
  // was asked for first.
  void Finish(nlohmann::json result);
  // The run ended with a JSON-RPC error ({code, message}): failed (cancelled when asked first).
  void Fail(nlohmann::json error);

  // ---- the client's side ----
  // tasks/update: answers by key; keys not pending (unknown, already answered) are ignored.
  void Answer(const nlohmann::json& responses);
  // tasks/cancel: fires the token; a finished task stays as it is.
  void RequestCancel();

  // The CreateTaskResult fields (taskId, status, createdAt, lastUpdatedAt, ttlMs,
  // pollIntervalMs), without resultType.
  nlohmann::json Summary() const;
  // The DetailedTask of tasks/get: the summary, plus inputRequests (input_required), result
  // (completed), error (failed), and for a running task its output so far in
  // _meta["dev.sandbox-mcp/output"].
  nlohmann::json Detailed() const;
  bool terminal() const;
  std::chrono::system_clock::time_point created_at() const { return created_; }

  // ---- the store's side ----
  // The bytes of the finished task's JSON result (or error) as tasks/get sends it; 0 while
  // running and for a cancelled task.
  std::int64_t ResultBytes() const;
  // Frees the result: the task becomes failed with an error saying why (`reason`).
  void EvictResult(const std::string& reason);

 private:
  nlohmann::json SummaryLocked() const;
  void Touch();
  void End(TaskStatus status, nlohmann::json payload);
  using AnswerCallback = std::function<void(const nlohmann::json& answer)>;
  // The callbacks of every ask still open, emptied (to run outside the lock with null).
  std::vector<AnswerCallback> TakeAskersLocked();

  const std::string id_;
  const std::string principal_;
  const std::chrono::system_clock::time_point created_;
  const TaskOptions options_;
  exec::CancelToken cancel_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  TaskStatus status_ = TaskStatus::kWorking;
  bool cancel_requested_ = false;
  std::chrono::system_clock::time_point updated_;
  nlohmann::json pending_ = nlohmann::json::object();  // inputRequests not answered yet
  nlohmann::json answers_ = nlohmann::json::object();  // answered, not yet taken by the run
  std::map<std::string, AnswerCallback> askers_;       // AskInput's keys still pending
  nlohmann::json result_;                              // completed: the CallToolResult
  nlohmann::json error_;                               // failed: {code, message}
  std::string output_;                                 // tail of the run's output
  std::size_t output_total_ = 0;
};

class TaskStore {
 public:
  TaskStore(TaskOptions options, std::shared_ptr<spdlog::logger> logger);
  ~TaskStore();
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

  // Creates a task and runs `work` on its own thread. The task can be found before this
  // returns (a client may ask tasks/get the moment it has the id). kLimit, with what was
  // reached, at a limit or after Shutdown.
  Result<std::shared_ptr<Task>> Start(const std::string& principal,
                                      std::function<void(Task&)> work);
  // The principal's task; nullptr for an unknown, expired or foreign id.
  std::shared_ptr<Task> Find(const std::string& principal, const std::string& id);
  // Cancels every task, waits for their runs, and refuses new ones. Idempotent; must run before
  // whatever the runs use (tools, services) is destroyed.
  void Shutdown();
  const TaskOptions& options() const { return options_; }
  std::size_t size() const;
  KeptResultStats kept_results() const;

 private:
  std::chrono::system_clock::time_point Now() const;
  void SweepLocked(std::chrono::system_clock::time_point now);
  // A finished task's result joins the kept ones, evicting the oldest past a bound.
  void Keep(const std::shared_ptr<Task>& task);
  // Erases the task `id` from tasks_ and its result from the kept ones. Needs mu_.
  void EraseLocked(const std::string& id);
  void EvictLocked(std::size_t index, const std::string& reason);

  struct KeptResult {
    std::shared_ptr<Task> task;
    std::int64_t bytes = 0;
  };

  const TaskOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  mutable std::mutex mu_;
  bool stopped_ = false;
  std::map<std::string, std::shared_ptr<Task>> tasks_;
  std::vector<KeptResult> kept_;  // oldest first
  std::map<std::string, std::int64_t> kept_by_principal_;
  std::int64_t kept_bytes_ = 0;
  std::uint64_t evicted_total_ = 0;
  TaskGroup runs_;
};

}  // namespace sandbox::mcp
