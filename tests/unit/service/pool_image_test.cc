#include "sandbox/service/pool_image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sandbox::service {
namespace {

using ::testing::HasSubstr;

config::PoolConfig MlPool() {
  config::PoolConfig pool;
  pool.name = "ml";
  pool.image = "sandbox-mcp-python:ml";
  pool.packages = {"python3-sklearn", "python3-seaborn", "python3-sklearn"};
  pool.pip_packages = {"tqdm"};
  return pool;
}

engine::ImageFacts Labelled(const std::string& deb, const std::string& pip) {
  engine::ImageFacts image;
  image.labels["io.sandbox-mcp.packages"] = deb;
  image.labels["io.sandbox-mcp.pip-packages"] = pip;
  return image;
}

TEST(PoolImageTest, ListsAreSpelledOneWay) {
  EXPECT_EQ(CanonicalPackages({"b", "a", "b", ""}), "a b");
  EXPECT_EQ(CanonicalPackages({}), "");
}

TEST(PoolImageTest, TheBuildCommandNamesTheImageAndItsLists) {
  EXPECT_EQ(BuildCommand(MlPool()),
            "images/build.sh --tag 'sandbox-mcp-python:ml' --packages 'python3-seaborn "
            "python3-sklearn' --pip 'tqdm'");
  config::PoolConfig plain;
  EXPECT_EQ(BuildCommand(plain), "images/build.sh");
  plain.image = "mine:1";
  EXPECT_EQ(BuildCommand(plain), "SANDBOX_IMAGE='mine:1' images/build.sh");
}

TEST(PoolImageTest, AnImageWithTheSameListsIsAccepted) {
  EXPECT_TRUE(CheckPoolImage(MlPool(), Labelled("python3-seaborn python3-sklearn", "tqdm")).ok());
  // A pool without packages takes any image, labelled or not.
  config::PoolConfig plain;
  EXPECT_TRUE(CheckPoolImage(plain, engine::ImageFacts{}).ok());
}

TEST(PoolImageTest, OtherListsAreRefusedWithTheRebuildCommand) {
  Status status = CheckPoolImage(MlPool(), Labelled("python3-sklearn", "tqdm"));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.error().message(), HasSubstr("pool \"ml\" uses image"));
  EXPECT_THAT(status.error().message(), HasSubstr("built with packages \"python3-sklearn\""));
  EXPECT_THAT(status.error().message(), HasSubstr("rebuild it with images/build.sh --tag"));
  // An image not built by images/build.sh has no labels at all.
  EXPECT_FALSE(CheckPoolImage(MlPool(), engine::ImageFacts{}).ok());
}

TEST(PoolImageTest, AMissingImageSaysHowToBuildIt) {
  Result<engine::ImageFacts> missing = Error(ErrorCode::kNotFound, "no such image");
  Status status = CheckPoolImage(MlPool(), missing);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kNotFound);
  EXPECT_THAT(status.error().message(),
              HasSubstr("which the engine does not have: build it with images/build.sh --tag"));
  // Other engine failures keep their own code and say which pool was being checked.
  Result<engine::ImageFacts> down = Error(ErrorCode::kUnavailable, "engine down");
  status = CheckPoolImage(MlPool(), down);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(status.error().ToString(), HasSubstr("pool \"ml\""));
}

}  // namespace
}  // namespace sandbox::service
