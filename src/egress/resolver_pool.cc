#include "resolver_pool.h"

#include <utility>

namespace sandbox::egress {

ResolverPool::ResolverPool(int threads, std::size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ResolverPool::~ResolverPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

bool ResolverPool::Submit(std::function<void()> job) {
  {
    const std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void ResolverPool::Loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace sandbox::egress
