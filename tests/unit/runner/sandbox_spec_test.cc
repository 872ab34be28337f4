#include "sandbox/runner/sandbox_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace sandbox::runner {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

docker::ContainerSpec Build(const config::PoolConfig& pool) {
  SandboxSpecInput input;
  input.pool = &pool;
  input.container_seccomp_json = R"({"defaultAction":"SCMP_ACT_ERRNO"})";
  input.instance_id = "test-instance";
  input.extra_labels = {{"io.sandbox-mcp.session", "s1"}};
  return BuildSandboxSpec(input);
}

TEST(SandboxSpecTest, EveryHardeningOptionIsSet) {
  config::PoolConfig pool;
  auto spec = Build(pool);
  const auto& hc = spec.host_config;
  EXPECT_EQ(hc.network_mode, "none");
  EXPECT_TRUE(spec.network_disabled);
  EXPECT_TRUE(hc.readonly_rootfs);
  EXPECT_EQ(hc.cap_drop, std::vector<std::string>{"ALL"});
  EXPECT_TRUE(hc.cap_add.empty());
  EXPECT_THAT(hc.security_opt, Contains("no-new-privileges:true"));
  EXPECT_THAT(hc.security_opt, Contains(R"(seccomp={"defaultAction":"SCMP_ACT_ERRNO"})"));
  EXPECT_EQ(hc.init, true);
  EXPECT_EQ(hc.ipc_mode, "private");
  ASSERT_TRUE(spec.user.has_value());
  EXPECT_EQ(*spec.user, "10001:10001");
  EXPECT_NE(spec.user->rfind("0:", 0), 0u);
  ASSERT_TRUE(hc.memory.has_value());
  EXPECT_EQ(*hc.memory, pool.zygote_memory_bytes + pool.limits.memory_bytes);
  EXPECT_EQ(hc.memory_swap, hc.memory);
  EXPECT_TRUE(hc.pids_limit.has_value());
  EXPECT_EQ(hc.nano_cpus, static_cast<std::int64_t>(pool.limits.cpus * 1e9));
  EXPECT_THAT(hc.tmpfs.at("/tmp"), HasSubstr("nosuid"));
}

TEST(SandboxSpecTest, NoHostMountsAndNoPrivilegeInTheBody) {
  config::PoolConfig pool;
  auto body = docker::BuildCreateBody(Build(pool));
  const auto& hc = body.at("HostConfig");
  EXPECT_FALSE(hc.contains("Binds"));
  EXPECT_FALSE(hc.contains("Mounts"));
  EXPECT_FALSE(hc.value("Privileged", false));
  EXPECT_EQ(body.dump().find("docker.sock"), std::string::npos);
  EXPECT_EQ(hc.value("AutoRemove", false), true);
}

TEST(SandboxSpecTest, LabelsAndBootstrap) {
  config::PoolConfig pool;
  pool.name = "fastpool";
  pool.mode = config::PoolMode::kFresh;
  pool.python = "/usr/bin/python3";
  auto spec = Build(pool);
  EXPECT_EQ(spec.labels.at("io.sandbox-mcp.managed"), "true");
  EXPECT_EQ(spec.labels.at("io.sandbox-mcp.instance"), "test-instance");
  EXPECT_EQ(spec.labels.at("io.sandbox-mcp.pool"), "fastpool");
  EXPECT_EQ(spec.labels.at("io.sandbox-mcp.mode"), "fresh");
  EXPECT_EQ(spec.labels.at("io.sandbox-mcp.session"), "s1");
  ASSERT_GE(spec.cmd.size(), 2u);
  EXPECT_EQ(spec.cmd.front(), "/usr/bin/python3");
  EXPECT_EQ(spec.cmd.back(), BootstrapCode());
  EXPECT_TRUE(spec.open_stdin);
  EXPECT_TRUE(spec.attach_stdin);
}

TEST(SandboxSpecTest, GvisorKeepsEnoughPids) {
  config::PoolConfig pool;
  pool.runtime = "runsc";
  pool.limits.pids = 16;
  auto spec = Build(pool);
  EXPECT_EQ(spec.host_config.runtime, "runsc");
  EXPECT_GE(*spec.host_config.pids_limit, 256);
}

}  // namespace
}  // namespace sandbox::runner

namespace sandbox::runner {
namespace {

// Only a session container meant to outlive its server keeps stdin open on detach; every other
// container's harness sees end of input when its server goes (and AutoRemove follows).
TEST(SandboxSpecTest, OnlySessionsThatOutliveTheServerKeepStdinOpen) {
  config::PoolConfig pool;
  SandboxSpecInput input;
  input.pool = &pool;
  input.instance_id = "test-instance";
  EXPECT_TRUE(BuildSandboxSpec(input).stdin_once);
  input.session = true;
  EXPECT_TRUE(BuildSandboxSpec(input).stdin_once);
  input.keep_stdin_open = true;
  auto spec = BuildSandboxSpec(input);
  EXPECT_FALSE(spec.stdin_once);
  EXPECT_TRUE(spec.open_stdin);
  EXPECT_TRUE(spec.host_config.readonly_rootfs);  // the hardening stays as it is
  EXPECT_EQ(spec.host_config.network_mode, "none");
  EXPECT_EQ(docker::BuildCreateBody(spec).at("HostConfig").value("AutoRemove", false), true);
}

}  // namespace
}  // namespace sandbox::runner
