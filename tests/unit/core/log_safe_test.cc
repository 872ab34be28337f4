#include "sandbox/core/log_safe.h"

#include <gtest/gtest.h>

#include <string>

#include "sandbox/core/log_context.h"
#include "sandbox/core/sha256.h"

namespace sandbox {
namespace {

// True when `text` holds no byte that could end or start a line, nor any other control byte.
bool OneLine(const std::string& text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) return false;
  }
  return true;
}

TEST(LogEscapeTest, ControlBytesQuotesAndBackslashesAreEscaped) {
  EXPECT_EQ(LogEscape("plain text: ok"), "plain text: ok");
  EXPECT_EQ(LogEscape("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(LogEscape(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(LogEscape("esc\x1b[31m del\x7f"), "esc\\x1b[31m del\\x7f");
  EXPECT_EQ(LogEscape(R"(say "hi" \ bye)"), R"(say \"hi\" \\ bye)");
  // Without quotes (a whole message): quotes and backslashes stay, controls do not.
  EXPECT_EQ(LogEscape("say \"hi\"\n", 100, false), "say \"hi\"\\n");
}

TEST(LogEscapeTest, InvalidUtf8AndUnicodeLineBreaksAreEscaped) {
  EXPECT_EQ(LogEscape("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 stays
  EXPECT_EQ(LogEscape("bad \xff\xc3("), "bad \\xff\\xc3(");
  EXPECT_EQ(LogEscape("nel\xc2\x85 ls\xe2\x80\xa8 ps\xe2\x80\xa9"),
            "nel\\u{0085} ls\\u{2028} ps\\u{2029}");
}

TEST(LogEscapeTest, LongTextIsCutAtACharacterBoundaryAndSaysSo) {
  const std::string text = std::string(10, 'a') + "\xc3\xa9" + std::string(100, 'b');
  EXPECT_EQ(LogEscape(text, 11), std::string(10, 'a') + " [... 102 bytes omitted]");
  EXPECT_EQ(LogEscape(std::string(300, 'x')).size(),
            kLogValueMaxBytes + std::string(" [... 44 bytes omitted]").size());
  // Escaping never lets a value grow past four output bytes per input byte, plus the marker.
  const std::string worst(5000, '\x01');
  EXPECT_LE(LogEscape(worst, 1000).size(), 4000U + 40U);
}

TEST(LogValueTest, PlainTokensStayBareAnythingElseIsQuoted) {
  EXPECT_EQ(LogValue("default"), "default");
  EXPECT_EQ(LogValue("ml-gpu_2.x:a/b@c+d"), "ml-gpu_2.x:a/b@c+d");
  EXPECT_EQ(LogValue(""), "\"\"");
  // A value cannot add a field: the space and the `=` stay inside quotes.
  EXPECT_EQ(LogValue("x principal=admin kind=session"), "\"x principal=admin kind=session\"");
  const std::string forged =
      LogValue("x\n[2026-12-06 00:00:00.000] [audit] [info] run principal=root");
  EXPECT_TRUE(OneLine(forged)) << forged;
  EXPECT_EQ(forged.front(), '"');
  EXPECT_EQ(forged.back(), '"');
  EXPECT_EQ(LogValue(std::string(300, 'a')).front(), '"');  // too long to be bare: cut, quoted
}

TEST(SessionDigestTest, SixteenHexDigitsOfTheIdsHashAndNeverTheId) {
  const std::string id = "S3cr3tSessionId0123456789abcdef";
  EXPECT_EQ(SessionDigest(id), Sha256Hex(id).substr(0, 16));
  EXPECT_EQ(SessionDigest(""), "-");
  EXPECT_NE(SessionDigest(id), SessionDigest(id + "x"));
}

TEST(SessionDigestTest, RedactReplacesEveryOccurrence) {
  const std::string id = "S3cr3tSessionId";
  const std::string text = "session " + id + " is busy; " + id;
  const std::string redacted = RedactSessionId(text, id);
  EXPECT_EQ(redacted,
            "session session#" + SessionDigest(id) + " is busy; session#" + SessionDigest(id));
  EXPECT_EQ(RedactSessionId(text, ""), text);
}

TEST(LogFieldsTest, RenderedFieldsQuoteWhatIsNotAPlainToken) {
  const LogFields fields = {{"principal", std::string("alice")},
                            {"pool", std::string("x principal=admin\nrun")},
                            {"exit_code", std::int64_t{-1}}};
  EXPECT_EQ(RenderLogFields(fields),
            " principal=alice pool=\"x principal=admin\\nrun\" exit_code=-1");
  EXPECT_EQ(CurrentLogFields(), nullptr);
  {
    const ScopedLogFields scoped(fields);
    EXPECT_EQ(CurrentLogFields(), &fields);
  }
  EXPECT_EQ(CurrentLogFields(), nullptr);
}

}  // namespace
}  // namespace sandbox
