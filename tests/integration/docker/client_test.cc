// Plain calls against the real engine: system, images, create errors, list, kill/wait, remove.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "docker_test_env.h"

namespace sandbox::docker::testing {
namespace {

using namespace std::chrono_literals;

class ClientTest : public DockerTest {};

TEST_F(ClientTest, NegotiatedVersionAndSystemCalls) {
  EXPECT_GE(client().api_version(), kMinApiVersion);
  EXPECT_LE(client().api_version(), kMaxTestedApiVersion);
  auto ping = client().Ping();
  ASSERT_TRUE(ping.ok()) << ping.error().ToString();
  EXPECT_FALSE(ping->api_version.empty());
  auto version = client().Version();
  ASSERT_TRUE(version.ok()) << version.error().ToString();
  EXPECT_FALSE(version->version.empty());
  EXPECT_EQ(version->os, "linux");
  auto info = client().Info();
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_GT(info->ncpu, 0);
  EXPECT_FALSE(info->runtimes.empty());
}

TEST_F(ClientTest, InspectImage) {
  auto image = client().InspectImage(TestImage());
  ASSERT_TRUE(image.ok()) << image.error().ToString();
  EXPECT_EQ(image->id.rfind("sha256:", 0), 0u);
  auto missing = client().InspectImage("sandbox-mcp-no-such-image:nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().http_status(), 404);
}

TEST_F(ClientTest, CreateFromMissingImageIsNotFoundAndNamesTheImage) {
  ContainerSpec spec = TestSpec({"true"});
  spec.image = "sandbox-mcp-no-such-image:nope";
  auto created = client().CreateContainer(spec);
  if (created.ok()) ContainerGuard guard(created->id);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), ErrorCode::kNotFound) << created.error().ToString();
  EXPECT_EQ(created.error().http_status(), 404);
  EXPECT_NE(created.error().message().find("sandbox-mcp-no-such-image"), std::string::npos)
      << created.error().message();
}

TEST_F(ClientTest, NameConflictIsConflict) {
  ContainerSpec spec = TestSpec({"true"});
  spec.name = "sandbox-mcp-test-conflict-" + std::to_string(::getpid());
  auto first = Create(spec);
  ASSERT_TRUE(first);
  auto second = client().CreateContainer(spec);
  if (second.ok()) ContainerGuard guard(second->id);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kConflict);
}

TEST_F(ClientTest, CreateWithHardenedHostConfigAndInspect) {
  ContainerSpec spec = TestSpec({"python3", "-c", "pass"});
  spec.user = "65534:65534";
  spec.network_disabled = true;
  HostConfig& h = spec.host_config;
  h.memory = 128 << 20;
  h.memory_swap = 128 << 20;
  h.nano_cpus = 500'000'000;
  h.pids_limit = 64;
  h.readonly_rootfs = true;
  h.tmpfs = {{"/tmp", "rw,nosuid,size=16m"}};
  h.cap_drop = {"ALL"};
  h.security_opt = {"no-new-privileges:true"};
  h.ulimits = {{"nproc", 64, 64}, {"nofile", 256, 256}};
  h.init = true;
  auto guard = Create(spec);
  ASSERT_TRUE(guard);
  auto info = client().InspectContainer(guard->id());
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_EQ(info->id, guard->id());
  EXPECT_EQ(info->state.status, "created");
  EXPECT_FALSE(info->state.running);
  EXPECT_EQ(info->labels.at(kManagedLabel), "true");
  EXPECT_EQ(info->config_image, TestImage());
  EXPECT_EQ(info->raw["HostConfig"]["ReadonlyRootfs"], true);
  EXPECT_EQ(info->raw["HostConfig"]["Memory"], 128 << 20);
  EXPECT_EQ(info->raw["HostConfig"]["Tmpfs"]["/tmp"], "rw,nosuid,size=16m");

  ASSERT_TRUE(client().StartContainer(guard->id()).ok());
  auto waited =
      client().WaitContainer(guard->id(), WaitCondition::kNotRunning, CallOptions::Within(60s));
  ASSERT_TRUE(waited.ok()) << waited.error().ToString();
  EXPECT_EQ(waited->exit_code, 0);
}

TEST_F(ClientTest, ListByLabel) {
  ContainerSpec spec = TestSpec({"true"});
  std::string unique = "list-" + std::to_string(::getpid());
  spec.labels["io.sandbox-mcp.test-case"] = unique;
  auto guard = Create(spec);
  ASSERT_TRUE(guard);
  ListOptions list;
  list.filters = {{"label", {"io.sandbox-mcp.test-case=" + unique}}};
  auto found = client().ListContainers(list);
  ASSERT_TRUE(found.ok()) << found.error().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, guard->id());
  EXPECT_EQ((*found)[0].labels.at(kTestLabel), "true");
  EXPECT_EQ((*found)[0].state, "created");
}

// The sandboxes are narrowed to the run's limits once the harness is ready (HarnessSandbox::
// NarrowToRunLimits): the engine must take new memory and pids limits on a running container.
TEST_F(ClientTest, UpdateNarrowsARunningContainer) {
  ContainerSpec spec = TestSpec({"sleep", "600"});
  spec.host_config.memory = 256 << 20;
  spec.host_config.memory_swap = 256 << 20;
  spec.host_config.pids_limit = 64;
  auto guard = Create(spec);
  ASSERT_TRUE(guard);
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());
  ResourceUpdate update;
  update.memory_bytes = 96 << 20;
  update.pids_limit = 20;
  Status updated = client().UpdateContainer(guard->id(), update);
  ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  auto info = client().InspectContainer(guard->id());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->raw["HostConfig"]["Memory"], 96 << 20);
  EXPECT_EQ(info->raw["HostConfig"]["MemorySwap"], 96 << 20);
  EXPECT_EQ(info->raw["HostConfig"]["PidsLimit"], 20);
  // A field left 0 stays as it is.
  ResourceUpdate pids_only;
  pids_only.pids_limit = 30;
  ASSERT_TRUE(client().UpdateContainer(guard->id(), pids_only).ok());
  info = client().InspectContainer(guard->id());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->raw["HostConfig"]["Memory"], 96 << 20);
  EXPECT_EQ(info->raw["HostConfig"]["PidsLimit"], 30);
  EXPECT_EQ(client().UpdateContainer("no-such-container-here", update).error().code(),
            ErrorCode::kNotFound);
}

TEST_F(ClientTest, KillThenWaitSees137) {
  auto guard = Create(TestSpec({"sleep", "600"}));
  ASSERT_TRUE(guard);
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());
  Status restart = client().StartContainer(guard->id());  // HTTP 304: already started
  EXPECT_TRUE(restart.ok()) << restart.error().ToString();
  ASSERT_TRUE(client().KillContainer(guard->id(), "SIGKILL").ok());
  auto waited =
      client().WaitContainer(guard->id(), WaitCondition::kNotRunning, CallOptions::Within(60s));
  ASSERT_TRUE(waited.ok()) << waited.error().ToString();
  EXPECT_EQ(waited->exit_code, 137);
  auto info = client().InspectContainer(guard->id());
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state.exit_code, 137);
  // Killing a stopped container is a conflict.
  Status again = client().KillContainer(guard->id());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ErrorCode::kConflict);
}

TEST_F(ClientTest, WaitDeadlineIsTimeout) {
  auto guard = Create(TestSpec({"sleep", "600"}));
  ASSERT_TRUE(guard);
  ASSERT_TRUE(client().StartContainer(guard->id()).ok());
  auto start = Clock::now();
  auto waited =
      client().WaitContainer(guard->id(), WaitCondition::kNotRunning, CallOptions::Within(300ms));
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.error().code(), ErrorCode::kTimeout) << waited.error().ToString();
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST_F(ClientTest, RemoveMissingIsNotFound) {
  Status s = client().RemoveContainer("sandbox-mcp-no-such-container", RemoveOptions{true, true});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNotFound);
  auto info = client().InspectContainer("sandbox-mcp-no-such-container");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace sandbox::docker::testing
