// The runner's engine-neutral spec (BuildSandboxSpec) as the Docker engine creates it
// (docker::ToContainerSpec): every hardening option, the labels and the limits.
#include "sandbox/runner/sandbox_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "sandbox/docker/docker_engine.h"

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
  return docker::ToContainerSpec(BuildSandboxSpec(input));
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
  EXPECT_TRUE(docker::ToContainerSpec(BuildSandboxSpec(input)).stdin_once);
  input.session = true;
  EXPECT_TRUE(docker::ToContainerSpec(BuildSandboxSpec(input)).stdin_once);
  input.keep_stdin_open = true;
  auto spec = docker::ToContainerSpec(BuildSandboxSpec(input));
  EXPECT_FALSE(spec.stdin_once);
  EXPECT_TRUE(spec.open_stdin);
  EXPECT_TRUE(spec.host_config.readonly_rootfs);  // the hardening stays as it is
  EXPECT_EQ(spec.host_config.network_mode, "none");
  EXPECT_EQ(docker::BuildCreateBody(spec).at("HostConfig").value("AutoRemove", false), true);
}

}  // namespace
}  // namespace sandbox::runner

namespace sandbox::runner {
namespace {

// BuildSandboxSpec as it was before the engine seam (it made the Docker spec itself), kept
// verbatim so the test below proves that the seam changed no container's create body.
docker::ContainerSpec SpecBeforeTheSeam(const SandboxSpecInput& input) {
  const config::PoolConfig& pool = *input.pool;
  docker::ContainerSpec spec;
  spec.image = pool.image;
  spec.cmd = {pool.python, "-I", "-u", "-c", BootstrapCode()};
  spec.entrypoint = std::vector<std::string>{};
  spec.user = std::string(kSandboxUser);
  spec.working_dir = "/tmp";
  spec.open_stdin = true;
  spec.attach_stdin = true;
  spec.attach_stdout = true;
  spec.attach_stderr = true;
  spec.stdin_once = !input.keep_stdin_open;
  spec.network_disabled = true;
  spec.labels = input.extra_labels;
  spec.labels[std::string(kManagedLabel)] = "true";
  spec.labels[std::string(kInstanceLabel)] = input.instance_id;
  spec.labels[std::string(kPoolLabel)] = pool.name;
  spec.labels[std::string(kModeLabel)] =
      input.session ? std::string("session") : std::string(config::PoolModeName(pool.mode));
  auto& hc = spec.host_config;
  hc.network_mode = "none";
  hc.readonly_rootfs = true;
  hc.cap_drop = {"ALL"};
  hc.security_opt = {"no-new-privileges:true", "seccomp=" + input.container_seccomp_json};
  hc.init = true;
  hc.ipc_mode = "private";
  hc.memory = ContainerMemoryBytes(pool);
  hc.memory_swap = hc.memory;
  hc.nano_cpus = static_cast<std::int64_t>(pool.limits.cpus * 1e9);
  hc.pids_limit = ContainerPidsLimit(pool);
  hc.shm_size = 64LL << 20;
  const auto tmpfs_size = std::to_string(pool.max_limits.tmpfs_bytes);
  hc.tmpfs["/tmp"] = "rw,nosuid,nodev,size=" + tmpfs_size + ",mode=1777";
  hc.ulimits = {
      {"nproc", pool.max_limits.nproc, pool.max_limits.nproc},
      {"nofile", pool.max_limits.nofile, pool.max_limits.nofile},
      {"fsize", pool.max_limits.fsize_bytes, pool.max_limits.fsize_bytes},
      {"core", 0, 0},
  };
  if (!pool.runtime.empty()) hc.runtime = pool.runtime;
  spec.extra = {{"HostConfig", {{"AutoRemove", true}}}};
  return spec;
}

TEST(SandboxSpecTest, TheDockerBodyIsTheOneBeforeTheSeam) {
  config::PoolConfig plain;
  config::PoolConfig tuned;
  tuned.name = "ml";
  tuned.mode = config::PoolMode::kFresh;
  tuned.image = "sandbox-mcp-python:ml";
  tuned.python = "/usr/bin/python3";
  tuned.limits.cpus = 1.5;
  tuned.limits.memory_bytes = 300LL << 20;
  tuned.limits.pids = 40;
  tuned.zygote_memory_bytes = 90LL << 20;
  tuned.max_limits.tmpfs_bytes = 100LL << 20;
  tuned.max_limits.nproc = 512;
  tuned.max_limits.nofile = 300;
  tuned.max_limits.fsize_bytes = 12345678;
  config::PoolConfig gvisor;
  gvisor.runtime = "runsc";
  gvisor.limits.cpus = 0.25;
  struct Case {
    const config::PoolConfig* pool;
    bool session;
    bool keep_stdin_open;
    std::map<std::string, std::string> labels;
  };
  const std::vector<Case> cases = {
      {&plain, false, false, {}},
      {&tuned, false, false, {{"io.sandbox-mcp.owner", "v1 boot=b pidns=p pid=1 start=2"}}},
      {&tuned, true, true, {{"io.sandbox-mcp.session-key", "k1"}}},
      {&gvisor, true, false, {}},
  };
  for (const auto& c : cases) {
    SandboxSpecInput input;
    input.pool = c.pool;
    input.container_seccomp_json = R"({"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]})";
    input.instance_id = "i-" + c.pool->name;
    input.extra_labels = c.labels;
    input.session = c.session;
    input.keep_stdin_open = c.keep_stdin_open;
    const auto now = docker::BuildCreateBody(docker::ToContainerSpec(BuildSandboxSpec(input)));
    const auto before = docker::BuildCreateBody(SpecBeforeTheSeam(input));
    EXPECT_EQ(now, before) << "pool " << c.pool->name << ", session " << c.session << ":\nnow    "
                           << now.dump() << "\nbefore " << before.dump();
  }
}

}  // namespace
}  // namespace sandbox::runner

namespace sandbox::runner {
namespace {

// A pool with a network policy: its sandboxes join the pool's egress network with the proxy
// as their resolver and its settings in their environment; the hardening is the same.
TEST(SandboxSpecTest, ASandboxOnAnEgressNetworkKeepsEveryHardeningOption) {
  config::PoolConfig pool;
  SandboxSpecInput input;
  input.pool = &pool;
  input.container_seccomp_json = R"({"defaultAction":"SCMP_ACT_ERRNO"})";
  input.network.name = "sandbox-mcp-egress-x-0ad500";
  input.network.dns = {"10.213.0.2"};
  input.network.env = {"http_proxy=http://10.213.0.2:3128"};
  auto spec = docker::ToContainerSpec(BuildSandboxSpec(input));
  const auto& hc = spec.host_config;
  EXPECT_EQ(hc.network_mode, "sandbox-mcp-egress-x-0ad500");
  EXPECT_FALSE(spec.network_disabled);
  EXPECT_EQ(hc.dns, std::vector<std::string>{"10.213.0.2"});
  EXPECT_THAT(hc.dns_options, Contains("timeout:1"));
  EXPECT_THAT(spec.env, Contains("http_proxy=http://10.213.0.2:3128"));
  EXPECT_TRUE(hc.readonly_rootfs);
  EXPECT_EQ(hc.cap_drop, std::vector<std::string>{"ALL"});
  EXPECT_THAT(hc.security_opt, Contains("no-new-privileges:true"));
  auto body = docker::BuildCreateBody(spec);
  EXPECT_TRUE(body["NetworkingConfig"]["EndpointsConfig"].contains("sandbox-mcp-egress-x-0ad500"));
  EXPECT_FALSE(body.contains("NetworkDisabled"));
  EXPECT_FALSE(body["HostConfig"].contains("PortBindings"));
}

TEST(SandboxSpecTest, AnEgressNetworkIsInternalWithoutTrafficBetweenSandboxesOrIpv6) {
  engine::NetworkSpec network{"n", "sbxeg0ad500", "10.213.0.0/24", "10.213.0.1", {{"a", "b"}}};
  auto body = docker::ToNetworkBody(network);
  EXPECT_EQ(body["Internal"], true);
  EXPECT_EQ(body["EnableIPv6"], false);
  EXPECT_EQ(body["Options"]["com.docker.network.bridge.enable_icc"], "false");
  EXPECT_EQ(body["Options"]["com.docker.network.bridge.name"], "sbxeg0ad500");
  EXPECT_EQ(body["IPAM"]["Config"][0]["Subnet"], "10.213.0.0/24");
  EXPECT_EQ(body["Labels"]["a"], "b");
}

TEST(SandboxSpecTest, TheProxyContainerIsHardenedAndEndsWithItsAttach) {
  engine::ServiceSpec service;
  service.image = "sandbox-mcp-egress:latest";
  service.cmd = {"/usr/local/bin/sandbox-egress"};
  service.user = "65534:65534";
  service.networks = {{"inner", "10.213.0.2"}, {"bridge", ""}};
  service.sysctls = {{"net.ipv4.ip_unprivileged_port_start", "53"}};
  auto spec = docker::ToServiceContainerSpec(service);
  auto body = docker::BuildCreateBody(spec);
  const auto& hc = body["HostConfig"];
  EXPECT_EQ(hc["ReadonlyRootfs"], true);
  EXPECT_EQ(hc["CapDrop"], nlohmann::json::array({"ALL"}));
  EXPECT_FALSE(hc.contains("CapAdd"));
  EXPECT_FALSE(hc.value("Privileged", false));
  EXPECT_EQ(hc["AutoRemove"], true);
  EXPECT_EQ(hc["NetworkMode"], "inner");
  EXPECT_EQ(hc["Sysctls"]["net.ipv4.ip_unprivileged_port_start"], "53");
  EXPECT_EQ(body["User"], "65534:65534");
  EXPECT_EQ(body["StdinOnce"], true);
  EXPECT_EQ(body["NetworkingConfig"]["EndpointsConfig"]["inner"]["IPAMConfig"]["IPv4Address"],
            "10.213.0.2");
  EXPECT_EQ(body.dump().find("docker.sock"), std::string::npos);
}

}  // namespace
}  // namespace sandbox::runner
