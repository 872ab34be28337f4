#include "sandbox/docker/container_spec.h"

#include <gtest/gtest.h>

namespace sandbox::docker {
namespace {

using nlohmann::json;

ContainerSpec SandboxSpec() {
  ContainerSpec s;
  s.name = "sbx-1";
  s.image = "sandbox-mcp-python:latest";
  s.cmd = {"python3", "-u", "-c", "import sys; exec(sys.stdin.read())"};
  s.env = {"PYTHONDONTWRITEBYTECODE=1"};
  s.user = "10001:10001";
  s.working_dir = "/tmp";
  s.labels = {{"io.sandbox-mcp.managed", "true"}};
  s.open_stdin = s.attach_stdin = s.stdin_once = true;
  s.attach_stdout = s.attach_stderr = true;
  s.network_disabled = true;
  HostConfig& h = s.host_config;
  h.network_mode = "none";
  h.memory = 256 << 20;
  h.memory_swap = 256 << 20;
  h.nano_cpus = 500'000'000;
  h.pids_limit = 64;
  h.readonly_rootfs = true;
  h.tmpfs = {{"/tmp", "rw,nosuid,size=16m"}, {"/run", "rw,size=1m"}};
  h.cap_drop = {"ALL"};
  h.security_opt = {"no-new-privileges:true", SeccompOpt(json{{"defaultAction", "SCMP_ACT_ERRNO"},
                                                              {"syscalls", json::array()}})};
  h.ulimits = {{"nproc", 64, 64}, {"nofile", 256, 512}, {"fsize", 1 << 20, 1 << 20}};
  h.init = true;
  h.runtime = "runsc";
  h.ipc_mode = "none";
  h.oom_score_adj = 500;
  h.shm_size = 1 << 20;
  return s;
}

TEST(ContainerSpecTest, FullSpecBody) {
  json body = BuildCreateBody(SandboxSpec());
  EXPECT_EQ(body["Image"], "sandbox-mcp-python:latest");
  EXPECT_EQ(body["Cmd"][3], "import sys; exec(sys.stdin.read())");
  EXPECT_EQ(body["Env"], json::array({"PYTHONDONTWRITEBYTECODE=1"}));
  EXPECT_EQ(body["User"], "10001:10001");
  EXPECT_EQ(body["WorkingDir"], "/tmp");
  EXPECT_EQ(body["Labels"]["io.sandbox-mcp.managed"], "true");
  EXPECT_EQ(body["OpenStdin"], true);
  EXPECT_EQ(body["AttachStdin"], true);
  EXPECT_EQ(body["StdinOnce"], true);
  EXPECT_EQ(body["Tty"], false);
  EXPECT_EQ(body["NetworkDisabled"], true);
  EXPECT_FALSE(body.contains("name"));
  EXPECT_FALSE(body.contains("Entrypoint"));

  const json& h = body["HostConfig"];
  EXPECT_EQ(h["NetworkMode"], "none");
  EXPECT_EQ(h["Memory"], 256 << 20);
  EXPECT_EQ(h["MemorySwap"], 256 << 20);
  EXPECT_EQ(h["NanoCpus"], 500'000'000);
  EXPECT_EQ(h["PidsLimit"], 64);
  EXPECT_EQ(h["ReadonlyRootfs"], true);
  EXPECT_EQ(h["Tmpfs"], (json{{"/tmp", "rw,nosuid,size=16m"}, {"/run", "rw,size=1m"}}));
  EXPECT_EQ(h["CapDrop"], json::array({"ALL"}));
  EXPECT_FALSE(h.contains("CapAdd"));
  ASSERT_EQ(h["SecurityOpt"].size(), 2u);
  EXPECT_EQ(h["SecurityOpt"][0], "no-new-privileges:true");
  // The profile travels as JSON text after "seccomp=", and parses back.
  std::string seccomp = h["SecurityOpt"][1];
  ASSERT_EQ(seccomp.rfind("seccomp=", 0), 0u);
  EXPECT_EQ(json::parse(seccomp.substr(8))["defaultAction"], "SCMP_ACT_ERRNO");
  EXPECT_EQ(h["Ulimits"],
            (json::array({{{"Name", "nproc"}, {"Soft", 64}, {"Hard", 64}},
                          {{"Name", "nofile"}, {"Soft", 256}, {"Hard", 512}},
                          {{"Name", "fsize"}, {"Soft", 1 << 20}, {"Hard", 1 << 20}}})));
  EXPECT_EQ(h["Init"], true);
  EXPECT_EQ(h["Runtime"], "runsc");
  EXPECT_EQ(h["IpcMode"], "none");
  EXPECT_EQ(h["OomScoreAdj"], 500);
  EXPECT_EQ(h["ShmSize"], 1 << 20);
}

TEST(ContainerSpecTest, MinimalSpecLeavesEngineDefaults) {
  ContainerSpec s;
  s.image = "img";
  json body = BuildCreateBody(s);
  EXPECT_EQ(body["Image"], "img");
  EXPECT_FALSE(body.contains("Cmd"));
  EXPECT_FALSE(body.contains("User"));
  EXPECT_FALSE(body.contains("Labels"));
  EXPECT_EQ(body["HostConfig"], json::object());
}

TEST(ContainerSpecTest, EmptyEntrypointIsSentWhenSet) {
  ContainerSpec s;
  s.image = "img";
  s.entrypoint = std::vector<std::string>{};
  EXPECT_EQ(BuildCreateBody(s)["Entrypoint"], json::array());
}

TEST(ContainerSpecTest, ExtraIsMergePatched) {
  ContainerSpec s = SandboxSpec();
  s.extra = {{"HostConfig", {{"CpusetCpus", "0"}, {"Init", nullptr}}}, {"StopSignal", "SIGKILL"}};
  json body = BuildCreateBody(s);
  EXPECT_EQ(body["HostConfig"]["CpusetCpus"], "0");
  EXPECT_EQ(body["HostConfig"]["Memory"], 256 << 20);  // merged, not replaced
  EXPECT_FALSE(body["HostConfig"].contains("Init"));   // null deletes
  EXPECT_EQ(body["StopSignal"], "SIGKILL");
}

}  // namespace
}  // namespace sandbox::docker
