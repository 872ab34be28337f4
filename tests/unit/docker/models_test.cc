#include "sandbox/docker/models.h"

#include <gtest/gtest.h>

namespace sandbox::docker {
namespace {

using nlohmann::json;

TEST(ModelsTest, ContainerInspect) {
  json j = json::parse(R"({
    "Id": "abc123", "Name": "/sbx-1", "Image": "sha256:feed",
    "Config": {"Image": "sandbox-mcp-python:latest", "Labels": {"io.sandbox-mcp.managed": "true"}},
    "State": {"Status": "exited", "Running": false, "OOMKilled": true, "ExitCode": 137,
              "Pid": 0, "StartedAt": "2026-01-01T00:00:00Z", "FinishedAt": "x", "Error": ""}})");
  auto c = ParseContainerInspect(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->id, "abc123");
  EXPECT_EQ(c->name, "sbx-1");
  EXPECT_EQ(c->config_image, "sandbox-mcp-python:latest");
  EXPECT_EQ(c->labels.at("io.sandbox-mcp.managed"), "true");
  EXPECT_EQ(c->state.status, "exited");
  EXPECT_TRUE(c->state.oom_killed);
  EXPECT_EQ(c->state.exit_code, 137);
  EXPECT_EQ(c->raw["Image"], "sha256:feed");
  EXPECT_FALSE(ParseContainerInspect(json::array()).ok());
}

TEST(ModelsTest, WaitWithAndWithoutError) {
  auto w = ParseWait(json::parse(R"({"StatusCode": 137, "Error": null})"));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->exit_code, 137);
  EXPECT_EQ(w->error, "");
  auto e = ParseWait(json::parse(R"({"StatusCode": 0, "Error": {"Message": "boom"}})"));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->error, "boom");
  EXPECT_FALSE(ParseWait(json::object()).ok());
}

TEST(ModelsTest, ContainerList) {
  auto l = ParseContainerList(json::parse(
      R"([{"Id": "a", "Names": ["/one"], "Image": "img", "State": "running", "Status": "Up",
           "Labels": {"k": "v"}}])"));
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ((*l)[0].names[0], "one");
  EXPECT_EQ((*l)[0].labels.at("k"), "v");
}

TEST(ModelsTest, InfoRuntimes) {
  auto i = ParseInfo(json::parse(
      R"({"ID": "x", "ServerVersion": "20.10.24", "Runtimes": {"runc": {}, "runsc": {}},
          "NCPU": 2, "CgroupVersion": "1"})"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->runtimes, (std::vector<std::string>{"runc", "runsc"}));
  EXPECT_EQ(i->ncpu, 2);
}

TEST(ModelsTest, ImageInspect) {
  auto i = ParseImageInspect(json::parse(
      R"({"Id": "sha256:1", "RepoTags": ["a:b"], "Config": {"User": "10001", "Cmd": null}})"));
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->user, "10001");
  EXPECT_TRUE(i->cmd.empty());
}

}  // namespace
}  // namespace sandbox::docker
