#include "sandbox/runner/result_checks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandbox::runner {
namespace {

using nlohmann::json;

TEST(ResultPathTest, ValidPathsPass) {
  for (const std::string& p :
       std::vector<std::string>{"a", "a/b.txt", "dir/sub/\xc3\xa9.csv", std::string(255, 'x')}) {
    EXPECT_EQ(ResultPathError(p), "") << p;
  }
}

TEST(ResultPathTest, ForgedPathsAreRefused) {
  for (const std::string& p :
       {std::string(), std::string("/etc/passwd"), std::string("../../etc/forged"),
        std::string("a/../b"), std::string("./a"), std::string("a//b"), std::string("a/"),
        std::string("a\0b", 3), std::string("new\nline"), std::string("del\x7f"),
        std::string("bad\xff.txt"), std::string("\xed\xb3\xbf"),  // an encoded surrogate
        std::string("\xc0\xaf"),                                  // an overlong '/'
        std::string(1025, 'x'), "a/" + std::string(256, 'y')}) {
    EXPECT_NE(ResultPathError(p), "") << p;
  }
}

TEST(MimeTypeTest, PlainTypesPass) {
  for (const std::string& m : std::vector<std::string>{
           "text/plain", "image/png",
           "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
           "application/ld+json", "text/x-python", "application/x-www-form-urlencoded", "model/3mf",
           std::string(127, 'a') + "/" + std::string(127, 'b')}) {
    EXPECT_EQ(MimeTypeError(m), "") << m;
    EXPECT_EQ(CheckedMimeType(m), m);
  }
}

// What a session's code can make mimetypes answer: never passed on, neither in a listing nor
// in a Content-Type header.
TEST(MimeTypeTest, AnythingElseBecomesOctetStream) {
  for (const std::string& m : std::vector<std::string>{
           "", "text", "/plain", "text/", "text/plain; charset=utf-8", "text/plain\r\n",
           "text/plain\r\nX-Injected: 1", "text/pl\nain", std::string("text/pl\0ain", 11),
           "text/plain ", " text/plain", "text/plain/x", "-text/plain", "text/.plain",
           "text/pl\"ain", "t\xc3\xa9xt/plain", std::string(128, 'a') + "/b",
           "a/" + std::string(128, 'b')}) {
    EXPECT_NE(MimeTypeError(m), "") << m;
    EXPECT_EQ(CheckedMimeType(m), "application/octet-stream") << m;
  }
}

TEST(InputPathTest, NormalizesWhatTheHarnessAccepts) {
  const std::vector<std::pair<std::string, std::string>> ok = {
      {"a.txt", "a.txt"}, {"./d//e/f.csv", "d/e/f.csv"}, {"..a/b..", "..a/b.."}, {"a/", "a"}};
  for (const auto& [in, want] : ok) {
    std::string got;
    EXPECT_EQ(InputPathError(in, &got), "") << in;
    EXPECT_EQ(got, want) << in;
  }
  EXPECT_EQ(InputPathError(std::string(255, 'x')), "");
}

TEST(InputPathTest, RefusesWhatTheHarnessRefuses) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty"},
      {std::string("a\0b", 3), "NUL"},
      {"/etc/passwd", "relative"},
      {"a/../b", "\"..\""},
      {"./", "names no file"},
      {".//.", "names no file"},
      {std::string(1025, 'x'), "longer than 1024 bytes"},
      {"d/" + std::string(256, 'y'), "component longer than 255 bytes"}};
  for (const auto& [in, why] : bad) {
    EXPECT_NE(InputPathError(in).find(why), std::string::npos) << in << ": " << InputPathError(in);
  }
}

TEST(CutTextTest, CutsAtACharacterBoundaryWithAMarker) {
  EXPECT_EQ(CutText("short", 100), "short");
  std::string e;
  for (int i = 0; i < 1000; ++i) e += "\xc3\xa9";
  const std::string cut = CutText(e, 100);
  EXPECT_LE(cut.size(), 100U);
  const auto marker = cut.find(" [... ");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(marker % 2, 0U) << "cut inside a character";
  EXPECT_EQ(cut.substr(marker), " [... " + std::to_string(2000 - marker) + " bytes omitted]");
}

TEST(BoundedTracebackTest, AMillionFramesBecomeTheEndsAndAMarker) {
  json frames = json::array();
  for (int i = 0; i < 1000000; ++i) {
    frames.push_back({{"file", "<cell>"}, {"line", i}, {"function", "f"}});
  }
  json tb = {{"type", "RecursionError"}, {"message", std::string(100000, 'm')}, {"frames", frames}};
  auto b = BoundedTraceback(tb);
  ASSERT_EQ(b.frames.size(), 100U);
  EXPECT_EQ(b.frames[49].line, 49);
  EXPECT_EQ(b.frames[50].function, "[... 999901 frames omitted ...]");
  EXPECT_EQ(b.frames[50].file, "");
  EXPECT_EQ(b.frames[51].line, 1000000 - 49);
  EXPECT_LE(b.message.size(), kResultLimits.traceback_max_message_bytes);
  EXPECT_EQ(b.type, "RecursionError");
}

TEST(BoundedTracebackTest, TheHarnessMarkerIsCountedAndBytesAreBounded) {
  json frames = json::array();
  frames.push_back({{"file", "<cell>"}, {"line", 1}, {"function", "f"}});
  frames.push_back({{"file", ""}, {"line", 0}, {"function", "[... 5000 frames omitted ...]"}});
  frames.push_back({{"file", "<cell>"}, {"line", 2}, {"function", "g"}});
  auto small = BoundedTraceback({{"type", "E"}, {"message", "m"}, {"frames", frames}});
  ASSERT_EQ(small.frames.size(), 3U);
  EXPECT_EQ(small.frames[1].function, "[... 5000 frames omitted ...]");

  json fat = json::array();
  for (int i = 0; i < 100; ++i) {
    fat.push_back({{"file", std::string(5000, 'f')}, {"line", i}, {"function", "g"}});
  }
  auto b = BoundedTraceback({{"type", "E"}, {"message", "m"}, {"frames", fat}});
  std::size_t bytes = 0;
  int markers = 0;
  for (const auto& f : b.frames) {
    bytes += f.file.size() + f.function.size();
    markers += f.function.find("frames omitted") != std::string::npos ? 1 : 0;
    EXPECT_LE(f.file.size(), kResultLimits.traceback_max_name_bytes);
  }
  EXPECT_LE(bytes, kResultLimits.traceback_max_total_bytes);
  EXPECT_EQ(markers, 1);
}

}  // namespace
}  // namespace sandbox::runner
