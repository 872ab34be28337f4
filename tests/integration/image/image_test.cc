// The sandbox image as the issue promises it: the scientific stack imports as a non-root user
// with the network off and a read-only root, Python is at the Snekbox path too, and the image
// carries the hash of its sources.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "sandbox/runner/container_handle.h"
#include "support/engine_fixture.h"

namespace sandbox {
namespace {

using sandbox::testing::Engine;
using ::testing::HasSubstr;

TEST(ImageTest, CarriesItsSourceHash) {
  auto image = Engine::Get().client().InspectImage(sandbox::testing::TestImage());
  ASSERT_TRUE(image.ok()) << image.error().ToString();
  auto it = image->labels.find("io.sandbox-mcp.source-hash");
  ASSERT_NE(it, image->labels.end());
  EXPECT_EQ(it->second.size(), 16u);
}

TEST(ImageTest, ScientificStackImportsAsNonRootWithoutNetwork) {
  const auto& client = Engine::Get().client();
  docker::ContainerSpec spec;
  spec.image = sandbox::testing::TestImage();
  spec.cmd = {"/snekbin/python/default/bin/python", "-c",
              "import os, socket, numpy, matplotlib, pandas, scipy, sympy, PIL\n"
              "import matplotlib.pyplot as plt\n"
              "plt.plot([1, 2]); plt.savefig('/tmp/p.png')\n"
              "print('uid', os.getuid())\n"
              "print('backend', matplotlib.get_backend())\n"
              "print('ifaces', sorted(os.listdir('/sys/class/net')))\n"
              "try:\n"
              "    open('/etc/x', 'w')\n"
              "except OSError as e:\n"
              "    print('rootfs', e.errno)\n"};
  spec.labels = {{"io.sandbox-mcp.managed", "true"}, {"io.sandbox-mcp.test", "true"}};
  spec.attach_stdout = true;
  spec.attach_stderr = true;
  spec.network_disabled = true;
  spec.host_config.network_mode = "none";
  spec.host_config.readonly_rootfs = true;
  spec.host_config.tmpfs["/tmp"] = "rw,nosuid,size=64m";
  spec.host_config.cap_drop = {"ALL"};
  spec.host_config.security_opt = {"no-new-privileges:true",
                                   "seccomp=" + Engine::Get().container_profile()};
  auto created = client.CreateContainer(spec);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  runner::ContainerHandle handle(&Engine::Get().engine(), created->id, nullptr);
  auto stream = client.Attach(handle.id(), docker::AttachOptions{});
  ASSERT_TRUE(stream.ok()) << stream.error().ToString();
  ASSERT_TRUE(client.StartContainer(handle.id()).ok());
  auto output = (*stream)->ReadAll(docker::DeadlineAfter(std::chrono::seconds(120)));
  ASSERT_TRUE(output.ok()) << output.error().ToString();
  auto waited = client.WaitContainer(handle.id(), docker::WaitCondition::kNotRunning);
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(waited->exit_code, 0) << output->stderr_data;
  EXPECT_THAT(output->stdout_data, HasSubstr("uid 10001\n"));
  EXPECT_THAT(output->stdout_data, HasSubstr("backend agg\n"));
  EXPECT_THAT(output->stdout_data, HasSubstr("ifaces ['lo']\n"));
  EXPECT_THAT(output->stdout_data, HasSubstr("rootfs 30\n"));  // EROFS
  // The font cache was built at image build time: matplotlib says nothing about building one.
  EXPECT_THAT(output->stderr_data, ::testing::Not(HasSubstr("font cache")));
}

}  // namespace
}  // namespace sandbox
