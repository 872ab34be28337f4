#include "sandbox/mcp/task_group.h"

#include <gtest/gtest.h>

#include <string>

#include "sandbox/core/log_context.h"

namespace sandbox::mcp {
namespace {

// A tools/call's thread logs for the HTTP request that brought it.
TEST(TaskGroupTest, ATaskRunsWithTheRequestIdOfItsSpawner) {
  TaskGroup tasks(4);
  std::string seen = "unset";
  {
    const ScopedRequestId scoped("req-7");
    ASSERT_TRUE(tasks.Spawn([&seen] { seen = std::string(CurrentRequestId()); }));
    tasks.Wait();
  }
  EXPECT_EQ(seen, "req-7");
  ASSERT_TRUE(tasks.Spawn([&seen] { seen = std::string(CurrentRequestId()); }));
  tasks.Wait();
  EXPECT_EQ(seen, "");
}

}  // namespace
}  // namespace sandbox::mcp
