#include "sandbox/core/memory_trim.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstddef>
#include <cstring>
#include <memory>

namespace sandbox {
namespace {

// Bytes of the blocks glibc gave a mapping of their own.
std::size_t MappedBytes() { return ::mallinfo2().hblkhd; }

// A block of `bytes`, written through a volatile pointer so the compiler keeps the allocation.
std::unique_ptr<char[]> Touched(std::size_t bytes) {
  auto block = std::make_unique<char[]>(bytes);
  char* volatile at = block.get();
  std::memset(at, 1, bytes);
  return block;
}

TEST(MemoryTrimmerTest, BlocksPastTheThresholdStayMappedAfterALargerOneIsFreed) {
  MemoryTrimmer::ConfigureAllocator(AllocatorOptions{});
  constexpr std::size_t kLarge = std::size_t{8} << 20;
  constexpr std::size_t kMedium = std::size_t{1} << 20;
  {
    // Freeing it would raise glibc's dynamic mmap threshold to 8 MiB, and the next 1 MiB block
    // would come from an arena, kept by the allocator once freed.
    const auto large = Touched(kLarge);
    if (MappedBytes() < kLarge) GTEST_SKIP() << "not glibc's allocator (a sanitizer's own)";
  }
  const std::size_t before = MappedBytes();
  auto medium = Touched(kMedium);
  const std::size_t during = MappedBytes();
  EXPECT_GE(during, before + kMedium) << "a 1 MiB block was not given a mapping of its own";
  medium.reset();
  EXPECT_LE(MappedBytes() + kMedium, during) << "a freed 1 MiB block was not unmapped";
}

}  // namespace
}  // namespace sandbox
