#include "worker_pool.h"

#include <algorithm>
#include <utility>

namespace sandbox::http {

WorkerPool::WorkerPool(std::size_t max_threads, std::size_t min_threads)
    : max_threads_(max_threads > 0 ? max_threads : 1) {
  std::lock_guard lock(mu_);
  while (threads_.size() < std::min(min_threads, max_threads_)) {
    threads_.emplace_back([this] { Work(nullptr); });
  }
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::enqueue(std::function<void()> fn) {
  std::unique_lock lock(mu_);
  if (!idle_.empty()) {
    Idle* worker = idle_.back();  // LIFO: its stack is the warmest
    idle_.pop_back();
    worker->task = std::move(fn);
    worker->cv.notify_one();
    return;
  }
  if (!shutdown_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this, first = std::move(fn)]() mutable { Work(std::move(first)); });
    return;
  }
  queue_.push_back(std::move(fn));
}

void WorkerPool::Work(std::function<void()> first) {
  std::function<void()> task = std::move(first);
  Idle me;
  std::unique_lock lock(mu_);
  for (;;) {
    if (task) {
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
    }
    if (!queue_.empty()) {
      task = std::move(queue_.front());
      queue_.pop_front();
      continue;
    }
    if (shutdown_) return;
    idle_.push_back(&me);
    me.cv.wait(lock, [&] { return me.task || me.stop; });
    if (me.task) {
      task = std::move(me.task);
      me.task = nullptr;
      continue;
    }
    return;  // stopped, nothing handed over (enqueue removed us from idle_ when it did)
  }
}

void WorkerPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    if (shutdown_ && threads_.empty()) return;
    shutdown_ = true;
    for (Idle* worker : idle_) {
      worker->stop = true;
      worker->cv.notify_one();
    }
    idle_.clear();
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

std::size_t WorkerPool::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

std::size_t WorkerPool::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

}  // namespace sandbox::http
