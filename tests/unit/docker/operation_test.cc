#include <gtest/gtest.h>

#include "sandbox/docker/client.h"

namespace sandbox::docker {
namespace {

TEST(OperationOfTest, IdsNamesVersionsAndQueriesAreDropped) {
  EXPECT_EQ(OperationOf("/v1.41/containers/3f2a9c/start?x=1"), "/containers/{id}/start");
  EXPECT_EQ(OperationOf("/v1.41/containers/create?name=sandbox-1"), "/containers/create");
  EXPECT_EQ(OperationOf("/v1.41/containers/json?all=1&filters=%7B%7D"), "/containers/json");
  EXPECT_EQ(OperationOf("/v1.41/containers/abc/archive?path=/work"), "/containers/{id}/archive");
  EXPECT_EQ(OperationOf("/v1.41/containers/abc"), "/containers/{id}");
  EXPECT_EQ(OperationOf("/v1.41/exec/e1/start"), "/exec/{id}/start");
  EXPECT_EQ(OperationOf("/_ping"), "/_ping");
  EXPECT_EQ(OperationOf("/version"), "/version");
  // An image name may hold slashes and a tag; none of it shows.
  EXPECT_EQ(OperationOf("/v1.41/images/registry.local/team/python:3.11/json"),
            "/images/{name}/json");
  EXPECT_EQ(OperationOf("/v1.41/images/json"), "/images/json");
  EXPECT_EQ(OperationOf(""), "/");
}

}  // namespace
}  // namespace sandbox::docker
