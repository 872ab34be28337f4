// MemoryTrimmer: gives freed heap memory back to the kernel every `interval` (glibc's
// malloc_trim). A large result (a 16 MiB file, a long traceback) is freed once it is sent, but
// glibc keeps the pages of its arenas for reuse, so the server's resident size would stay at
// its high-water mark; trimming brings it back near its idle level.
// Thread-safety: construct and destroy from one thread; the trimming runs on its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace sandbox {

class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(std::chrono::milliseconds interval = std::chrono::seconds(5));
  ~MemoryTrimmer();  // stops and joins the thread
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // One trim now, on the caller's thread; returns whether memory was given back.
  static bool TrimNow();
  // Caps glibc's malloc arenas (default 8 per core): with hundreds of HTTP and run threads each
  // new thread may get an arena of its own, and freed memory scattered over many arenas is
  // neither reused by the others nor trimmed well. Call once, before threads start.
  static void LimitArenas(int arenas);

 private:
  void Loop();

  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sandbox
