#include "sandbox/docker/archive.h"

#include <gtest/gtest.h>

#include "sandbox/core/base64.h"

namespace sandbox::docker {
namespace {

TEST(TarTest, SingleFileRoundTrip) {
  std::string content = "print('hi')\n";
  content += std::string("\0\xff binary", 9);
  auto tar = TarSingleFile("main.py", content, 0755);
  ASSERT_TRUE(tar.ok());
  EXPECT_EQ(tar->size() % 512, 0u);
  EXPECT_EQ(tar->size(), 512u + 512u + 1024u);  // header, one data block, end marker
  auto file = ExtractSingleFile(*tar);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(file->name, "main.py");
  EXPECT_EQ(file->content, content);
  EXPECT_EQ(file->mode, 0755u);
}

TEST(TarTest, EmptyAndBlockSizedFiles) {
  for (std::size_t size : {0u, 511u, 512u, 513u, 100000u}) {
    std::string content(size, 'x');
    auto tar = TarSingleFile("f", content);
    ASSERT_TRUE(tar.ok());
    auto file = ExtractSingleFile(*tar);
    ASSERT_TRUE(file.ok()) << size;
    EXPECT_EQ(file->content, content) << size;
  }
}

TEST(TarTest, SeveralEntriesAndLongNames) {
  std::string long_dir(120, 'd');
  std::vector<TarEntry> in = {
      {"out", "", 0755, 1700000000, '5'},
      {"out/a.txt", "A", 0644, 1700000000, '0'},
      {long_dir + "/file.txt", "long", 0600, 0, '0'},
  };
  auto tar = WriteTar(in);
  ASSERT_TRUE(tar.ok()) << tar.error().ToString();
  auto out = ReadTar(*tar);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].name, "out/");
  EXPECT_EQ((*out)[0].type, '5');
  EXPECT_EQ((*out)[1].name, "out/a.txt");
  EXPECT_EQ((*out)[1].mtime, 1700000000);
  EXPECT_EQ((*out)[2].name, long_dir + "/file.txt");
  EXPECT_EQ((*out)[2].content, "long");
}

TEST(TarTest, NameTooLongIsRejected) {
  auto tar = TarSingleFile(std::string(300, 'n'), "x");
  ASSERT_FALSE(tar.ok());
  EXPECT_EQ(tar.error().code(), ErrorCode::kInvalidArgument);
}

TEST(TarTest, CorruptChecksumIsDetected) {
  auto tar = TarSingleFile("f", "data");
  ASSERT_TRUE(tar.ok());
  std::string bad = *tar;
  bad[0] = 'g';
  auto out = ReadTar(bad);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kProtocol);
}

TEST(TarTest, TruncatedArchiveIsDetected) {
  auto tar = TarSingleFile("f", std::string(2000, 'x'));
  ASSERT_TRUE(tar.ok());
  EXPECT_FALSE(ReadTar(std::string_view(*tar).substr(0, 1024)).ok());
}

TEST(TarTest, PaxPathOverridesHeaderName) {
  // A PAX extended header ('x') carrying "path", as Go's archive/tar writes for long names.
  std::string record = "path=very/long/name.txt\n";
  std::string pax = std::to_string(record.size() + 3) + " " + record;  // "27 path=...\n"
  ASSERT_EQ(pax.size(), record.size() + 3);
  auto tar = WriteTar({{"PaxHeaders/x", pax, 0644, 0, '0'}, {"short", "body", 0644, 0, '0'}});
  ASSERT_TRUE(tar.ok());
  std::string t = *tar;
  t[156] = 'x';  // turn the first entry into a PAX header and fix its checksum
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < 512; ++i) {
    sum += (i >= 148 && i < 156) ? std::uint64_t{' '} : static_cast<unsigned char>(t[i]);
  }
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%06llo", static_cast<unsigned long long>(sum));
  t.replace(148, 7, std::string(buf, 7));
  auto out = ReadTar(t);
  ASSERT_TRUE(out.ok()) << out.error().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].name, "very/long/name.txt");
  EXPECT_EQ((*out)[0].content, "body");
}

TEST(TarTest, NoRegularFileIsNotFound) {
  auto tar = WriteTar({{"dir", "", 0755, 0, '5'}});
  ASSERT_TRUE(tar.ok());
  auto f = ExtractSingleFile(*tar);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kNotFound);
}

TEST(PathStatTest, WrongTypesAndHugeNumbersCountAsAbsent) {
  // An engine (or a proxy in front of one) may send anything; nothing here may throw.
  const std::string json =
      R"({"name": 7, "size": 1.1e301, "mode": -5, "mtime": [], "linkTarget": {}})";
  auto st = ParsePathStatHeader(sandbox::Base64Encode(json));
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(st->name, "");
  EXPECT_EQ(st->size, 0);
  EXPECT_EQ(st->mode, 0U);
  EXPECT_EQ(st->mtime, "");
  EXPECT_EQ(st->link_target, "");
  EXPECT_EQ(ParsePathStatHeader("a$b").error().code(), sandbox::ErrorCode::kProtocol);
}

TEST(PathStatTest, ParsesEngineHeader) {
  // base64 of {"name":"x.txt","size":5,"mode":420,"mtime":"2026-01-01T00:00:00Z","linkTarget":""}
  auto st = ParsePathStatHeader(
      "eyJuYW1lIjoieC50eHQiLCJzaXplIjo1LCJtb2RlIjo0MjAsIm10aW1lIjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJs"
      "aW5rVGFyZ2V0IjoiIn0=");
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(st->name, "x.txt");
  EXPECT_EQ(st->size, 5);
  EXPECT_EQ(st->mode, 420u);
  EXPECT_FALSE(st->is_dir());
  EXPECT_EQ(st->mtime, "2026-01-01T00:00:00Z");
  EXPECT_FALSE(ParsePathStatHeader("bm90IGpzb24=").ok());  // "not json"
}

}  // namespace
}  // namespace sandbox::docker
