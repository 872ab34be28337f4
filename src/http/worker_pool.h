// WorkerPool: the task queue behind the HTTP server (httplib's TaskQueue), in place of
// httplib::ThreadPool. Two differences matter for a long-running server:
//   - `min_threads` workers start at once, more on demand up to `max_threads`, so a server
//     that never has 320 requests at once never has 320 threads;
//   - the worker that became idle last takes the next task (LIFO), instead of whichever waiter
//     the condition variable wakes (in practice every thread in turn). Each thread keeps the
//     stack pages it has touched, so round-robin across 320 threads grew the resident size by
//     a few KiB per request for as long as threads were left that had not served one (the soak
//     measured +16 % over an hour); LIFO keeps the same few threads, and their stacks, warm.
// A task beyond max_threads busy ones waits in a FIFO queue, as with httplib's pool.
// Thread-safety: enqueue() from any thread; shutdown() once, from the server's thread.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sandbox::http {

class WorkerPool final : public httplib::TaskQueue {
 public:
  explicit WorkerPool(std::size_t max_threads, std::size_t min_threads = 0);
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs the queued tasks, then joins every worker. Idempotent.
  void shutdown() override;

  std::size_t threads() const;  // started so far
  std::size_t idle() const;

 private:
  struct Idle {
    std::condition_variable cv;
    std::function<void()> task;  // set by enqueue() when it picks this worker
    bool stop = false;
  };
  void Work(std::function<void()> first);

  const std::size_t max_threads_;
  mutable std::mutex mu_;
  std::vector<Idle*> idle_;  // waiting workers; the last one is the most recently idle
  std::deque<std::function<void()>> queue_;  // tasks while every worker is busy
  std::vector<std::thread> threads_;
  bool shutdown_ = false;
};

}  // namespace sandbox::http
