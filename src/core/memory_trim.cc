#include "sandbox/core/memory_trim.h"

#include <malloc.h>

namespace sandbox {

MemoryTrimmer::MemoryTrimmer(std::chrono::milliseconds interval)
    : interval_(interval), thread_([this] { Loop(); }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool MemoryTrimmer::TrimNow() { return malloc_trim(0) != 0; }

void MemoryTrimmer::ConfigureAllocator(const AllocatorOptions& options) {
  // main calls this once, before any thread starts. Setting the mmap threshold also turns off
  // glibc's dynamic thresholds, so the trim threshold stays at its default (128 KiB) too.
  mallopt(M_ARENA_MAX, options.max_arenas);  // NOLINT(concurrency-mt-unsafe)
  mallopt(M_MMAP_THRESHOLD,                  // NOLINT(concurrency-mt-unsafe)
          static_cast<int>(options.mmap_threshold_bytes));
}

void MemoryTrimmer::Loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    TrimNow();
    lock.lock();
  }
}

}  // namespace sandbox
