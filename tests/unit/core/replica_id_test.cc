#include "sandbox/core/replica_id.h"

#include <gtest/gtest.h>

namespace sandbox {
namespace {

TEST(ReplicaIdTest, NamesAreShortLowerCaseLettersAndDigits) {
  EXPECT_TRUE(IsReplicaName("r1"));
  EXPECT_TRUE(IsReplicaName("a"));
  EXPECT_TRUE(IsReplicaName("node0042"));  // 8, the most
  EXPECT_FALSE(IsReplicaName(""));
  EXPECT_FALSE(IsReplicaName("node00420"));  // 9
  EXPECT_FALSE(IsReplicaName("r-1"));        // the dash ends the prefix
  EXPECT_FALSE(IsReplicaName("R1"));
  EXPECT_FALSE(IsReplicaName("r_1"));
  EXPECT_FALSE(IsReplicaName("r/1"));
  EXPECT_FALSE(IsReplicaName("r 1"));
}

TEST(ReplicaIdTest, AReplicaPrefixesItsNameAndADashWithoutOneTheIdIsUnchanged) {
  EXPECT_EQ(ReplicaId("r1", "4f3a9c"), "r1-4f3a9c");
  EXPECT_EQ(ReplicaId("", "4f3a9c"), "4f3a9c");
}

}  // namespace
}  // namespace sandbox
