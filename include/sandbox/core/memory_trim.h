// MemoryTrimmer: gives freed heap memory back to the kernel every `interval` (glibc's
// malloc_trim). A large result (a 16 MiB file, a long traceback) is freed once it is sent, but
// glibc keeps the pages of its arenas for reuse, so the server's resident size would stay at
// its high-water mark; trimming brings it back near its idle level.
// Thread-safety: construct and destroy from one thread; the trimming runs on its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

namespace sandbox {

// How glibc's malloc is set up at start (docs/memory-budget.md, "The process at rest").
struct AllocatorOptions {
  // Arenas (glibc's default: 8 per core). With hundreds of HTTP and run threads each new thread
  // may get an arena of its own, and freed memory scattered over many arenas is neither reused
  // by the others nor trimmed well.
  int max_arenas = 4;
  // Blocks from this size up get a mapping of their own, unmapped when freed. Fixed, because
  // glibc otherwise raises it to the size of each large block freed (up to 32 MiB) and its trim
  // threshold to twice that: answers of several MiB are then carved from the arenas, and the
  // free space left at the top of a thread's arena (which malloc_trim does not release) stays
  // resident. Measured in the soak's pressure mix: 15-30 MiB of freed memory held at rest, RSS
  // up and down by that much between rests; fixed at 128 KiB (glibc's initial value), about
  // 1 MiB, and RSS flat.
  std::size_t mmap_threshold_bytes = std::size_t{128} << 10;
};

class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(std::chrono::milliseconds interval = std::chrono::seconds(5));
  ~MemoryTrimmer();  // stops and joins the thread
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // One trim now, on the caller's thread; returns whether memory was given back.
  static bool TrimNow();
  // Sets glibc's allocator up as AllocatorOptions says. Call once, in main, before any
  // thread starts.
  static void ConfigureAllocator(const AllocatorOptions& options);

 private:
  void Loop();

  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sandbox
