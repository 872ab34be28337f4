// ContainerHandle over the engine seam: what it asks of the engine, and what it must not ask
// (Release and Forget make no call; an abandoned engine may not answer at all).
#include "sandbox/runner/container_handle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fake_engine.h"

namespace sandbox::runner {
namespace {

using ::testing::ElementsAre;

const std::string kId(64, 'a');

engine::Listed Running(const std::string& id) {
  return engine::Listed{id, "running", 0, {{"io.sandbox-mcp.managed", "true"}}, "local"};
}

engine::SandboxState RunningState() {
  engine::SandboxState state;
  state.status = "running";
  state.running = true;
  return state;
}

TEST(ContainerHandleTest, DestroyingTheHandleRemovesTheContainer) {
  testing::FakeEngine engine;
  engine.Add(Running(kId), RunningState());
  {
    ContainerHandle handle(&engine, kId, nullptr);
    EXPECT_TRUE(handle);
    EXPECT_EQ(handle.short_id(), kId.substr(0, 12));
  }
  EXPECT_FALSE(engine.Has(kId));
  EXPECT_THAT(engine.calls(), ElementsAre("remove " + kId));
}

TEST(ContainerHandleTest, KillLeavesItOwnedUntilRemoved) {
  testing::FakeEngine engine;
  engine.Add(Running(kId), RunningState());
  ContainerHandle handle(&engine, kId, nullptr);
  handle.Kill();
  EXPECT_TRUE(engine.Has(kId));
  EXPECT_TRUE(handle);
  handle.Remove();
  EXPECT_FALSE(handle);
  EXPECT_FALSE(engine.Has(kId));
  handle.Remove();  // empty: nothing more is asked
  EXPECT_THAT(engine.calls(), ElementsAre("kill " + kId, "remove " + kId));
}

TEST(ContainerHandleTest, ReleaseAndForgetAskNothingOfTheEngine) {
  testing::FakeEngine engine;
  const std::string other(64, 'b');
  engine.Add(Running(kId), RunningState());
  engine.Add(Running(other), RunningState());
  {
    ContainerHandle left(&engine, kId, nullptr);
    left.Release();
    EXPECT_FALSE(left);
    // A lost engine answers nothing; the handle must not wait for it.
    engine.SetDown(true);
    ContainerHandle lost(&engine, other, nullptr);
    lost.Forget();
    EXPECT_FALSE(lost);
  }
  engine.SetDown(false);
  EXPECT_TRUE(engine.Has(kId));
  EXPECT_TRUE(engine.Has(other));
  EXPECT_TRUE(engine.calls().empty());
}

TEST(ContainerHandleTest, AMovedHandleRemovesOnce) {
  testing::FakeEngine engine;
  const std::string other(64, 'b');
  engine.Add(Running(kId), RunningState());
  engine.Add(Running(other), RunningState());
  ContainerHandle first(&engine, kId, nullptr);
  ContainerHandle second(&engine, other, nullptr);
  second = std::move(first);  // `other` is removed now; kId belongs to `second`
  EXPECT_FALSE(engine.Has(other));
  EXPECT_TRUE(engine.Has(kId));
  ContainerHandle third(std::move(second));
  EXPECT_EQ(third.id(), kId);
  third.Remove();
  EXPECT_THAT(engine.calls(), ElementsAre("remove " + other, "remove " + kId));
}

}  // namespace
}  // namespace sandbox::runner
