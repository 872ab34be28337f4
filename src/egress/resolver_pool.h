// A few threads that run blocking work (getaddrinfo) off the proxy's event loop. Bounded: a
// full queue refuses the job at once (the proxy answers 503), so a slow resolver cannot grow
// memory or threads.
// Thread-safety: Submit from any thread; the destructor waits for running jobs and drops
// queued ones.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sandbox::egress {

class ResolverPool {
 public:
  ResolverPool(int threads, std::size_t max_queued);
  ~ResolverPool();
  ResolverPool(const ResolverPool&) = delete;
  ResolverPool& operator=(const ResolverPool&) = delete;

  // False when the queue is full.
  bool Submit(std::function<void()> job);

 private:
  void Loop();

  std::size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sandbox::egress
