// TaskGroup: runs requests that take long (tools/call) on their own threads, so the thread that
// reads a transport stays free for the notifications/cancelled that may stop them. Bounded, and
// waits for every task before it is destroyed. A task works for the request that spawned it:
// it runs with the spawning thread's request id (core/log_context.h), so its log lines name it.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>

namespace sandbox::mcp {

class TaskGroup {
 public:
  explicit TaskGroup(std::size_t max_tasks) : max_tasks_(max_tasks) {}
  ~TaskGroup() { Wait(); }
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  // Starts `task` on a new thread. False when max_tasks are running (the caller answers
  // "busy") or the thread could not be created.
  bool Spawn(std::function<void()> task);
  // Blocks until no task runs.
  void Wait();
  std::size_t running() const;

 private:
  const std::size_t max_tasks_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::size_t running_ = 0;
};

}  // namespace sandbox::mcp
