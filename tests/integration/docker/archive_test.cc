// Archive GET/PUT against the real engine, including the read-only-rootfs refusal.
#include <gtest/gtest.h>

#include "docker_test_env.h"

namespace sandbox::docker::testing {
namespace {

class ArchiveTest : public DockerTest {};

TEST_F(ArchiveTest, PutThenGetRoundTrip) {
  auto guard = Create(TestSpec({"true"}));  // writable rootfs; never started
  ASSERT_TRUE(guard);
  std::string content = "print('round trip')\n";
  content += std::string("\0\x01\xfe binary tail", 15);
  auto tar = TarSingleFile("roundtrip.py", content, 0640);
  ASSERT_TRUE(tar.ok());
  Status put = client().PutArchive(guard->id(), "/tmp", *tar);
  ASSERT_TRUE(put.ok()) << put.error().ToString();

  auto got = client().GetArchive(guard->id(), "/tmp/roundtrip.py");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->stat.name, "roundtrip.py");
  EXPECT_EQ(got->stat.size, static_cast<std::int64_t>(content.size()));
  EXPECT_EQ(got->stat.mode & 0777, 0640u);
  EXPECT_FALSE(got->stat.is_dir());
  auto file = ExtractSingleFile(got->tar);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(file->name, "roundtrip.py");
  EXPECT_EQ(file->content, content);

  auto stat = client().StatPath(guard->id(), "/tmp");
  ASSERT_TRUE(stat.ok()) << stat.error().ToString();
  EXPECT_TRUE(stat->is_dir());
  auto missing = client().StatPath(guard->id(), "/tmp/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  auto missing_get = client().GetArchive(guard->id(), "/tmp/nope");
  ASSERT_FALSE(missing_get.ok());
  EXPECT_EQ(missing_get.error().code(), ErrorCode::kNotFound);
}

TEST_F(ArchiveTest, ReadOnlyRootfsRefusesPutButAllowsGet) {
  ContainerSpec spec = TestSpec({"python3", "-c", "open('/tmp/out.txt','w').write('made inside')"});
  spec.host_config.readonly_rootfs = true;
  spec.host_config.tmpfs = {{"/tmp", "rw,size=16m"}};
  auto guard = Create(spec);
  ASSERT_TRUE(guard);
  auto tar = TarSingleFile("x.txt", "x");
  ASSERT_TRUE(tar.ok());
  Status put = client().PutArchive(guard->id(), "/tmp", *tar);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().code(), ErrorCode::kEngine);
  EXPECT_EQ(put.error().http_status(), 500);
  EXPECT_NE(put.error().message().find("read-only"), std::string::npos) << put.error().message();

  // Reading from the image's filesystem works on a read-only container.
  auto got = client().GetArchive(guard->id(), "/etc/passwd");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  auto file = ExtractSingleFile(got->tar);
  ASSERT_TRUE(file.ok());
  EXPECT_NE(file->content.find("root:"), std::string::npos);
}

}  // namespace
}  // namespace sandbox::docker::testing
