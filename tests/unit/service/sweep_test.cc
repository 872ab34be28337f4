// The start-up sweep (SweepLeftovers, RemoveLeftovers) and the owner probe over the engine seam,
// with a fake engine: which containers are removed, which are left alone, which are kept for
// adoption, and that nothing of another instance is touched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/owner.h"
#include "sandbox/service/sandbox_service.h"
#include "sandbox/service/session_record.h"
#include "support/fake_engine.h"

namespace sandbox::service {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// /proc as the test says: only the listed pids run.
class Processes final : public OwnerProbe {
 public:
  std::map<std::int64_t, ProcStat> running;
  std::optional<ProcStat> FindProcess(std::int64_t pid) const override {
    auto it = running.find(pid);
    if (it == running.end()) return std::nullopt;
    return it->second;
  }
  Result<ContainerLife> FindContainer(const std::string& /*id*/) const override {
    return ContainerLife{};
  }
};

Owner Process(std::int64_t pid) {
  Owner o;
  o.boot_id = "boot-1";
  o.pid_namespace = "pid:[4026531836]";
  o.pid = pid;
  o.start_ticks = 100;
  return o;
}

engine::SandboxState State(const std::string& status) {
  engine::SandboxState state;
  state.status = status;
  state.running = status == "running" || status == "paused";
  state.paused = status == "paused";
  state.started_at = "2026-12-06T07:00:00Z";
  return state;
}

class SweepTest : public ::testing::Test {
 protected:
  // A container of `instance` owned by `owner` (no owner label when null).
  void Left(const std::string& id, const std::string& instance, const Owner* owner,
            const std::string& status = "running", engine::Labels extra = {}) {
    engine::Labels labels = std::move(extra);
    labels[std::string(runner::kManagedLabel)] = "true";
    labels[std::string(runner::kInstanceLabel)] = instance;
    if (owner != nullptr) labels[std::string(kOwnerLabel)] = FormatOwner(*owner);
    engine_.Add(engine::Listed{id, status, 1000, labels, "local"}, State(status));
  }

  SweepOptions Options() const {
    SweepOptions options;
    options.instance_id = "mine";
    options.self = Process(1);
    options.unlabelled_max_life = std::chrono::seconds(600);
    return options;
  }

  testing::FakeEngine engine_;
  Processes processes_;
};

TEST_F(SweepTest, RemovesOnlyTheGoneOwnersContainersOfItsInstance) {
  const Owner self = Process(1);
  const Owner alive = Process(2);
  const Owner gone = Process(3);
  processes_.running[2] = {'S', 100};
  Left("own", "mine", &self);
  Left("alive", "mine", &alive);
  Left("gone", "mine", &gone);
  Left("old-stopped", "mine", nullptr, "exited");
  Left("other", "theirs", &gone);
  auto counts = SweepLeftovers(engine_, Options(), processes_, nullptr);
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  EXPECT_EQ(counts->removed, 2);
  EXPECT_EQ(counts->kept, 2);
  EXPECT_TRUE(counts->left_sessions.empty());
  EXPECT_THAT(engine_.calls(), UnorderedElementsAre("remove gone", "remove old-stopped"));
  EXPECT_TRUE(engine_.Has("own"));
  EXPECT_TRUE(engine_.Has("alive"));
  EXPECT_TRUE(engine_.Has("other"));
}

TEST_F(SweepTest, KeepsRunningSessionContainersOfGoneOwnersForAdoption) {
  const Owner gone = Process(3);
  const engine::Labels session = {{std::string(runner::kModeLabel), "session"},
                                  {std::string(kSessionKeyLabel), SessionKey("s-1")}};
  Left("session", "mine", &gone, "running", session);
  Left("stopped-session", "mine", &gone, "exited", session);
  SweepOptions options = Options();
  options.keep_sessions = true;
  auto counts = SweepLeftovers(engine_, options, processes_, nullptr);
  ASSERT_TRUE(counts.ok()) << counts.error().ToString();
  ASSERT_EQ(counts->left_sessions.size(), 1u);
  EXPECT_EQ(counts->left_sessions[0].id, "session");
  EXPECT_EQ(counts->left_sessions[0].labels.at(std::string(kSessionKeyLabel)), SessionKey("s-1"));
  EXPECT_EQ(counts->removed, 1);
  EXPECT_THAT(engine_.calls(), ElementsAre("remove stopped-session"));
}

TEST_F(SweepTest, AnEngineThatDoesNotAnswerIsAnError) {
  engine_.SetDown(true);
  auto counts = SweepLeftovers(engine_, Options(), processes_, nullptr);
  ASSERT_FALSE(counts.ok());
  EXPECT_EQ(counts.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(counts.error().message(), ::testing::HasSubstr("list leftover containers"));
}

TEST_F(SweepTest, RemoveLeftoversTakesEveryContainerOfTheInstanceOnly) {
  const Owner self = Process(1);
  Left("a", "mine", &self);
  Left("b", "mine", nullptr, "exited");
  Left("c", "theirs", &self);
  auto removed = RemoveLeftovers(engine_, "mine", nullptr);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 2);
  EXPECT_TRUE(engine_.Has("c"));
}

TEST(SystemOwnerProbeTest, AsksTheEngineAboutAnOwnersContainer) {
  testing::FakeEngine fake;
  fake.Add(engine::Listed{"running", "running", 0, {}, "local"}, State("running"));
  fake.Add(engine::Listed{"paused", "paused", 0, {}, "local"}, State("paused"));
  fake.Add(engine::Listed{"exited", "exited", 0, {}, "local"}, State("exited"));
  const SystemOwnerProbe probe(fake);
  auto running = probe.FindContainer("running");
  ASSERT_TRUE(running.ok());
  EXPECT_TRUE(running->exists);
  EXPECT_TRUE(running->running);
  EXPECT_EQ(running->started_at, "2026-12-06T07:00:00Z");
  auto paused = probe.FindContainer("paused");  // frozen is not running for an owner
  ASSERT_TRUE(paused.ok());
  EXPECT_TRUE(paused->exists);
  EXPECT_FALSE(paused->running);
  auto exited = probe.FindContainer("exited");
  ASSERT_TRUE(exited.ok());
  EXPECT_FALSE(exited->running);
  auto gone = probe.FindContainer("gone");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->exists);
  fake.SetDown(true);
  EXPECT_FALSE(probe.FindContainer("running").ok());  // undecidable, not "gone"
}

}  // namespace
}  // namespace sandbox::service
