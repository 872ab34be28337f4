// SlotLimiter: a bound on how many holders something has at once, taken without waiting: a
// caller either gets a slot at once or is refused. The HTTP server bounds with one the requests
// that hold a worker thread for long (SSE streams, runs in progress): each takes a slot or is
// answered 503, and the server has a worker per slot on top of those for ordinary requests, so
// long requests can never take every worker (http/server_setup.h).
//
// Thread-safety: every method from any thread. A slot is released when its last shared_ptr goes,
// on any thread, also after the limiter is gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace sandbox {

class SlotLimiter {
 public:
  // One held place; gives it back when destroyed.
  class Slot {
   public:
    ~Slot() { counter_->fetch_sub(1); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    friend class SlotLimiter;
    explicit Slot(std::shared_ptr<std::atomic<std::size_t>> counter)
        : counter_(std::move(counter)) {}
    std::shared_ptr<std::atomic<std::size_t>> counter_;
  };

  explicit SlotLimiter(std::size_t capacity)
      : capacity_(capacity), in_use_(std::make_shared<std::atomic<std::size_t>>(0)) {}

  // A slot, or nullptr when all `capacity` are held. Shared, so copyable callbacks (httplib's
  // content providers are std::function) can hold it for as long as they live.
  std::shared_ptr<Slot> TryAcquire() {
    std::size_t used = in_use_->load();
    do {
      if (used >= capacity_) return nullptr;
    } while (!in_use_->compare_exchange_weak(used, used + 1));
    return std::shared_ptr<Slot>(new Slot(in_use_));
  }

  std::size_t capacity() const { return capacity_; }
  std::size_t in_use() const { return in_use_->load(); }

 private:
  const std::size_t capacity_;
  std::shared_ptr<std::atomic<std::size_t>> in_use_;
};

}  // namespace sandbox
