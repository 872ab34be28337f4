#include "sandbox/service/audit_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "sandbox/core/log_safe.h"

namespace sandbox::service {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

AuditOptions Options(bool log_code = false) {
  return AuditOptions{{{"default", "recycle"}, {"ml", "fresh"}}, "default", log_code};
}

exec::RunRequest Request(std::string code = "print('secret-code')") {
  exec::RunRequest request;
  request.code = std::move(code);
  request.principal = "alice";
  return request;
}

exec::RunResult Finished() {
  exec::RunResult r;
  r.verdict = exec::Verdict::kOk;
  r.exit_code = 0;
  r.duration_ms = 12;
  r.stdout_text = "hello\n";
  r.images.resize(2);
  r.pool = "default";
  r.engine = "e2";
  r.sandbox_id = "3f9c0a1b2c3d";
  return r;
}

TEST(AuditLogTest, AFinishedRunSaysWhoWhereAndHowItEnded) {
  const std::string line = AuditLine(Options(), "alice", "", Request(), Finished(), 31);
  EXPECT_EQ(line,
            "run principal=alice kind=oneshot pool=default mode=recycle verdict=ok exit_code=0 "
            "signal=- code_ms=12 total_ms=31 stdout_bytes=6 stderr_bytes=0 images=2 files=0 "
            "engine=e2 sandbox=3f9c0a1b2c3d session=-");
  EXPECT_THAT(line, Not(HasSubstr("secret-code")));
}

TEST(AuditLogTest, ARefusalSaysWhyQuoted) {
  exec::RunRequest request = Request();
  request.pool = "ml";
  Result<exec::RunResult> refused =
      Error(ErrorCode::kBusy, "every sandbox is busy\nrun principal=mallory");
  const std::string line = AuditLine(Options(), "alice", "", request, refused, 10003);
  EXPECT_EQ(line, "run principal=alice kind=oneshot pool=ml mode=fresh refused=" +
                      std::string(ErrorCodeName(ErrorCode::kBusy)) +
                      " total_ms=10003 session=- reason=\"every sandbox is busy\\nrun "
                      "principal=mallory\"");
}

TEST(AuditLogTest, SessionsAreNamedByADigestNotTheirId) {
  const std::string id = "S3cr3tSessionId0123456789abcdef";
  const std::string line = AuditLine(Options(), "bob", id, Request(), Finished(), 20);
  EXPECT_THAT(line, HasSubstr(" kind=session "));
  EXPECT_THAT(line, HasSubstr(" mode=session "));
  EXPECT_THAT(line, Not(HasSubstr(id)));
  const auto at = line.find("session=");
  ASSERT_NE(at, std::string::npos);
  const std::string digest = line.substr(at + 8, 16);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << digest;
  // Stable: the same session gets the same digest, another one another.
  EXPECT_THAT(AuditLine(Options(), "bob", id, Request(), Finished(), 1), HasSubstr(digest));
  EXPECT_THAT(AuditLine(Options(), "bob", id + "x", Request(), Finished(), 1),
              Not(HasSubstr(digest)));
}

// A pool name is the client's: it cannot end the line nor add a field in text, and is one key's
// value in JSON (the fields themselves).
TEST(AuditLogTest, AClientsPoolNameCannotForgeAFieldOrALine) {
  exec::RunRequest request = Request();
  request.pool = "x principal=admin kind=session verdict=ok\n[audit] run principal=root";
  Result<exec::RunResult> refused = Error(ErrorCode::kNotFound, "unknown pool");
  const std::string line = AuditLine(Options(), "alice", "", request, refused, 1);
  EXPECT_THAT(line, HasSubstr(" pool=\"x principal=admin kind=session verdict=ok\\n[audit] run "
                              "principal=root\" mode=- "));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const LogFields fields = AuditFields(Options(), "alice", "", request, refused, 1);
  int principals = 0;
  for (const auto& field : fields) {
    if (field.key == "principal") {
      ++principals;
      EXPECT_EQ(std::get<std::string>(field.value), "alice");
    }
    if (field.key == "pool") {
      EXPECT_EQ(std::get<std::string>(field.value), request.pool);
    }
  }
  EXPECT_EQ(principals, 1);
}

// A refusal about a session names it to its owner; the audit line by its digest only.
TEST(AuditLogTest, ARefusalsReasonNamesTheSessionByItsDigest) {
  const std::string id = "S3cr3tSessionId0123456789abcdef";
  Result<exec::RunResult> busy =
      Error(ErrorCode::kBusy, "session " + id + " is still running another call");
  const std::string line = AuditLine(Options(), "bob", id, Request(), busy, 5);
  EXPECT_THAT(line, Not(HasSubstr(id)));
  EXPECT_THAT(line, HasSubstr("reason=\"session session#" + SessionDigest(id) + " is still"));
}

TEST(AuditLogTest, CodeOnlyWhenAskedForAndCut) {
  const std::string code = "print('x')\n" + std::string(5000, 'y');
  const std::string line = AuditLine(Options(true), "alice", "", Request(code), Finished(), 31);
  EXPECT_THAT(line, HasSubstr(" code=\"print('x')\\nyyy"));
  EXPECT_LT(line.size(), 4096U + 400U);
}

}  // namespace
}  // namespace sandbox::service
