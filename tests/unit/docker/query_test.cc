#include "sandbox/docker/query.h"

#include <gtest/gtest.h>

namespace sandbox::docker {
namespace {

TEST(QueryTest, PercentEncoding) {
  EXPECT_EQ(PercentEncode("abc-._~XYZ09"), "abc-._~XYZ09");
  EXPECT_EQ(PercentEncode("a b/c?d=e&f"), "a%20b%2Fc%3Fd%3De%26f");
  EXPECT_EQ(PercentEncode("\xff\x01"), "%FF%01");
  EXPECT_EQ(PathSegment("my container"), "my%20container");
  EXPECT_EQ(ImagePath("registry:5000/org/img:tag"), "registry:5000/org/img:tag");
  EXPECT_EQ(ImagePath("img@sha256:ab"), "img@sha256:ab");
}

TEST(QueryTest, EmptyQueryEncodesToNothing) { EXPECT_EQ(Query().Encode(), ""); }

TEST(QueryTest, ParametersInOrder) {
  std::string q = Query().Add("stream", true).Add("stdin", false).Add("name", "a b").Encode();
  EXPECT_EQ(q, "?stream=1&stdin=0&name=a%20b");
}

TEST(QueryTest, FiltersAreJsonThenEscaped) {
  Filters f = {{"label", {"io.sandbox-mcp.managed=true", "io.sandbox-mcp.test=true"}},
               {"type", {"container"}}};
  EXPECT_EQ(EncodeFilters(f),
            R"({"label":["io.sandbox-mcp.managed=true","io.sandbox-mcp.test=true"],)"
            R"("type":["container"]})");
  std::string q = Query().Add("all", true).AddFilters({{"label", {"k=v"}}}).Encode();
  EXPECT_EQ(q, "?all=1&filters=%7B%22label%22%3A%5B%22k%3Dv%22%5D%7D");
  EXPECT_EQ(Query().AddFilters({}).Encode(), "");
}

}  // namespace
}  // namespace sandbox::docker
