#include "sandbox/core/machine_memory.h"

#include <gtest/gtest.h>

namespace sandbox {
namespace {

const char* kMeminfo = "MemTotal:       24576000 kB\nMemFree:         1000 kB\n";

TEST(MachineMemoryTest, RamWhenTheCgroupHasNoLimit) {
  EXPECT_EQ(MachineMemoryBytes(kMeminfo, "max\n"), 24576000LL * 1024);
  EXPECT_EQ(MachineMemoryBytes(kMeminfo, ""), 24576000LL * 1024);
  // cgroup v1 "unlimited": a number above the RAM.
  EXPECT_EQ(MachineMemoryBytes(kMeminfo, "9223372036854771712\n"), 24576000LL * 1024);
}

TEST(MachineMemoryTest, TheCgroupLimitWhenSmaller) {
  EXPECT_EQ(MachineMemoryBytes(kMeminfo, "1073741824\n"), 1LL << 30);
}

TEST(MachineMemoryTest, ZeroWhenNothingReads) {
  EXPECT_EQ(MachineMemoryBytes("", ""), 0);
  EXPECT_EQ(MachineMemoryBytes("MemTotal: lots\n", "max"), 0);
}

TEST(MachineMemoryTest, ThisMachineHasSome) { EXPECT_GT(MachineMemoryBytes(), 0); }

}  // namespace
}  // namespace sandbox
