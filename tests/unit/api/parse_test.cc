// The HTTP API's pure parts: Snekbox's request rules and return codes, /v1/execute's request
// and result shapes, engine-error mapping, UTF-8 repair of streamed output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/execute.h"
#include "sandbox/api/snekbox.h"
#include "sandbox/core/base64.h"
#include "sandbox/core/utf8.h"

namespace sandbox::api {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

EvalPlan Plan(const json& body) {
  EvalPlan plan;
  auto error = ParseEvalRequest(body, plan);
  EXPECT_FALSE(error.has_value()) << error->message;
  return plan;
}

ApiError EvalRefusal(const json& body) {
  EvalPlan plan;
  auto error = ParseEvalRequest(body, plan);
  EXPECT_TRUE(error.has_value()) << body.dump();
  return error.value_or(ApiError{});
}

TEST(SnekboxRequest, InputRunsAsTheCodeItself) {
  auto plan = Plan({{"input", "print('Hello')"}});
  EXPECT_THAT(plan.args, ElementsAre("-c", "print('Hello')"));
  EXPECT_FALSE(plan.launcher);
  EXPECT_EQ(plan.request.code, "print('Hello')");
  EXPECT_EQ(plan.request.pool, "");
}

TEST(SnekboxRequest, ArgsWithDashCRunAsTheCodeItself) {
  auto plan = Plan({{"args", {"-c", "print('Hello')"}}});
  EXPECT_FALSE(plan.launcher);
  EXPECT_EQ(plan.request.code, "print('Hello')");
  // input with args ["-c"] is the same request.
  EXPECT_EQ(Plan({{"input", "print('Hello')"}, {"args", {"-c"}}}).request.code, "print('Hello')");
}

TEST(SnekboxRequest, InputIsAppendedToArgs) {
  auto plan = Plan({{"input", "pass"}, {"args", {"-m", "timeit"}}});
  EXPECT_THAT(plan.args, ElementsAre("-m", "timeit", "pass"));
  EXPECT_TRUE(plan.launcher);
  EXPECT_THAT(plan.request.code,
              HasSubstr("subprocess.run([sys.executable] + [\"-m\",\"timeit\",\"pass\"])"));
}

TEST(SnekboxRequest, EmptyLeadingArgsAreDropped) {
  auto plan = Plan({{"input", "print('hello')"}, {"args", {""}}});
  EXPECT_THAT(plan.args, ElementsAre("print('hello')"));
  EXPECT_TRUE(plan.launcher);
}

TEST(SnekboxRequest, ScriptWithFilesAndExtraArgvUseTheLauncher) {
  auto plan = Plan({{"args", {"main.py", "a b"}},
                    {"files", {{{"path", "main.py"}, {"content", Base64Encode("print(1)")}}}}});
  EXPECT_TRUE(plan.launcher);
  ASSERT_EQ(plan.request.files.size(), 1u);
  EXPECT_EQ(plan.request.files[0].path, "main.py");
  EXPECT_EQ(plan.request.files[0].content, "print(1)");
  EXPECT_TRUE(Plan({{"args", {"-c", "import sys; print(sys.argv)", "x"}}}).launcher);
  EXPECT_TRUE(Plan({{"args", json::array()}}).launcher);
}

TEST(SnekboxRequest, LauncherQuotesArgsAsAPythonList) {
  const std::string code = LauncherCode({"-c", "print(\"é\\n\")", "tab\there"});
  EXPECT_THAT(code, HasSubstr(R"x(["-c","print(\"é\\n\")","tab\there"])x"));
  EXPECT_THAT(code, HasSubstr("os.kill(os.getpid(), -_status)"));
}

TEST(SnekboxRequest, NulInArgsIsAnsweredWithoutARun) {
  auto plan = Plan({{"input", std::string("print(1)\0", 9)}});
  ASSERT_TRUE(plan.immediate_failure.has_value());
  EXPECT_EQ(*plan.immediate_failure, "ValueError: embedded null byte");
}

TEST(SnekboxRequest, NeitherInputNorArgsIsRefused) {
  auto error = EvalRefusal({{"stuff", "foo"}});
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.title, "Request data failed validation");
  EXPECT_THAT(error.message, HasSubstr("input"));
}

TEST(SnekboxRequest, WrongTypesAreRefused) {
  EXPECT_EQ(EvalRefusal({{"args", 400}}).field, "args");
  EXPECT_EQ(EvalRefusal({{"args", {"-c", 1}}}).field, "args[1]");
  EXPECT_EQ(EvalRefusal({{"input", 3}}).field, "input");
  EXPECT_EQ(EvalRefusal({{"args", json::array()}, {"files", {215}}}).field, "files[0]");
  EXPECT_EQ(EvalRefusal({{"input", "1"}, {"files", {{{"content", ""}}}}}).field, "files[0].path");
  EXPECT_EQ(EvalRefusal(json::array()).status, 400);
}

TEST(SnekboxRequest, PathsFollowSnekboxRules) {
  // Snekbox's legal paths (tests/api/test_eval.py), normalized lexically.
  const std::vector<std::pair<std::string, std::string>> legal = {
      {"file.txt", "file.txt"},
      {"./0.jpg", "0.jpg"},
      {"path/to/file", "path/to/file"},
      {"folder/../hm", "hm"},
      {"folder/./to/./somewhere", "folder/to/somewhere"},
      {"traversal/but/../not/beyond/../root", "traversal/not/root"},
      {R"(backslash\\okay)", R"(backslash\\okay)"},
      {"numbers/0123456789", "numbers/0123456789"}};
  for (const auto& [path, normalized] : legal) {
    auto plan = Plan({{"args", {"test.py"}}, {"files", {{{"path", path}}}}});
    ASSERT_EQ(plan.request.files.size(), 1u) << path;
    EXPECT_EQ(plan.request.files[0].path, normalized);
    EXPECT_EQ(plan.request.files[0].content, "");
  }
  for (const std::string path :
       {"../secrets", "../../dir", "dir/../../secrets", "dir/var/../../../file"}) {
    auto error = EvalRefusal({{"args", {"test.py"}}, {"files", {{{"path", path}}}}});
    EXPECT_EQ(error.title, "Request file is invalid");
    EXPECT_EQ(error.message, "File path '" + path + "' may not traverse beyond root");
    EXPECT_EQ(error.field, "files[0].path");
  }
  for (const std::string& path :
       std::vector<std::string>{"/", "/etc", "/etc/vars/secrets", std::string("a\0b", 3)}) {
    EXPECT_EQ(EvalRefusal({{"args", {"test.py"}}, {"files", {{{"path", path}}}}}).status, 400);
  }
}

TEST(SnekboxRequest, ContentIsBase64WithWhitespaceIgnored) {
  auto plan = Plan({{"input", "1"}, {"files", {{{"path", "a"}, {"content", "SGVs\nbG8="}}}}});
  EXPECT_EQ(plan.request.files[0].content, "Hello");
  auto error = EvalRefusal({{"input", "1"}, {"files", {{{"path", "a"}, {"content", "!!"}}}}});
  EXPECT_EQ(error.message, "Invalid base64 encoding for file 'a'");
}

TEST(SnekboxRequest, ExecutablePathIsKeptForTheService) {
  EXPECT_EQ(
      Plan({{"input", "1"}, {"executable_path", "/snekbin/python/3.14/bin/python"}}).executable,
      "/snekbin/python/3.14/bin/python");
  EXPECT_EQ(Plan({{"input", "1"}, {"executable_path", ""}}).executable, "");
  EXPECT_EQ(Plan({{"input", "1"}}).executable, "");
  auto error = EvalRefusal({{"input", "1"}, {"executable_path", 3}});
  EXPECT_EQ(error.field, "executable_path");
}

exec::RunResult WithVerdict(exec::Verdict verdict, int exit_code = -1,
                            std::optional<int> signal = std::nullopt) {
  exec::RunResult r;
  r.verdict = verdict;
  r.exit_code = exit_code;
  r.signal = signal;
  return r;
}

TEST(SnekboxResponse, ReturnCodesPerVerdict) {
  using V = exec::Verdict;
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kOk, 0)), 0);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kError, 1)), 1);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kError, 3)), 3);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kTimeout, -1, 9)), 137);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kMemory, -1, 9)), 137);  // killed at the limit
  // The code ended itself (an uncaught MemoryError, or only a child was killed): its status.
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kMemory, 1)), 1);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kMemory, 0)), 0);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kOutputLimit, -1, 9)), 143);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kSignal, -1, 11)), 139);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kInternal)), std::nullopt);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kCancelled)), std::nullopt);
  EXPECT_EQ(SnekboxReturnCode(WithVerdict(V::kError, -1)), std::nullopt);
}

TEST(SnekboxResponse, NullReturnCodeCarriesTheReason) {
  auto r = WithVerdict(exec::Verdict::kInternal);
  r.detail = "the harness died";
  auto body = EvalResponse(r, "partial output");
  EXPECT_TRUE(body["returncode"].is_null());
  EXPECT_EQ(body["stdout"], "the harness died");
  EXPECT_EQ(body["files"], json::array());
}

TEST(SnekboxResponse, FilesAreBase64WithSize) {
  auto r = WithVerdict(exec::Verdict::kOk, 0);
  r.files.push_back(exec::OutputFile{"output.png", 4, "image/png", std::string("\x89PNG", 4)});
  auto body = EvalResponse(r, "out\xff");
  EXPECT_EQ(body["stdout"], "out\xEF\xBF\xBD");
  EXPECT_EQ(body["returncode"], 0);
  EXPECT_EQ(body["files"], json::parse(R"([{"path":"output.png","size":4,"content":"iVBORw=="}])"));
}

TEST(SnekboxResponse, FilesInSnekboxOrderWithoutHiddenOrUnderscoreNames) {
  auto r = WithVerdict(exec::Verdict::kOk, 0);
  for (const char* path :
       {"test.txt", "dir/test2.txt", ".hidden", "normal/.hidden.txt", ".hidden/b.txt",
        "_secret.txt", "mod/__init__.py", "_dir/kept.txt", "a_b.txt"}) {
    r.files.push_back(exec::OutputFile{path, 1, "text/plain", "x"});
  }
  auto body = EvalResponse(r, "");
  std::vector<std::string> paths;
  for (const auto& f : body["files"]) paths.push_back(f["path"]);
  EXPECT_THAT(paths, ElementsAre("_dir/kept.txt", "a_b.txt", "dir/test2.txt", "test.txt"));
}

TEST(SnekboxResponse, MergerKeepsArrivalOrderAndCompletesFromTheResult) {
  OutputMerger merger;
  merger.OnOutput(exec::Stream::kStdout, "a\n");
  merger.OnOutput(exec::Stream::kStderr, "b\n");
  merger.OnOutput(exec::Stream::kStdout, "c\n");
  auto r = WithVerdict(exec::Verdict::kOutputLimit);
  r.stdout_text = "a\nc\n[marker]\n";
  r.stderr_text = "b\n";
  EXPECT_EQ(merger.Merged(r), "a\nb\nc\n[marker]\n");
}

exec::RunRequest Request(const json& body) {
  exec::RunRequest request;
  std::string session_id;
  auto error = ParseExecuteRequest(body, 1 << 20, request, session_id);
  EXPECT_FALSE(error.has_value()) << error->message;
  return request;
}

ApiError ExecuteRefusal(const json& body, std::size_t max_code = 1 << 20) {
  exec::RunRequest request;
  std::string session_id;
  auto error = ParseExecuteRequest(body, max_code, request, session_id);
  EXPECT_TRUE(error.has_value()) << body.dump();
  return error.value_or(ApiError{});
}

TEST(ExecuteRequest, AllFields) {
  auto request = Request({{"code", "print(1)"},
                          {"timeout_s", 2.5},
                          {"pool", "big"},
                          {"files", {{{"path", "d/x.csv"}, {"content_base64", "YSxiCg=="}}}}});
  EXPECT_EQ(request.code, "print(1)");
  EXPECT_EQ(request.limits.timeout_s, 2.5);
  EXPECT_EQ(request.pool, "big");
  ASSERT_EQ(request.files.size(), 1u);
  EXPECT_EQ(request.files[0].path, "d/x.csv");
  EXPECT_EQ(request.files[0].content, "a,b\n");
}

TEST(ExecuteRequest, RefusalsNameTheField) {
  EXPECT_EQ(ExecuteRefusal(json::object()).field, "code");
  EXPECT_EQ(ExecuteRefusal({{"code", 1}}).field, "code");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"timeout_s", "5"}}).field, "timeout_s");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"timeout_s", -1}}).field, "timeout_s");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"pool", 7}}).field, "pool");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"colour", "red"}}).field, "colour");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"files", {{{"path", "a"}}}}}).field,
            "files[0].content_base64");
  EXPECT_EQ(
      ExecuteRefusal({{"code", "1"}, {"files", {{{"path", "a"}, {"content_base64", "@"}}}}}).field,
      "files[0].content_base64");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"files", {{{"path", "a"}, {"content", ""}}}}}).field,
            "files[0].content");
  EXPECT_EQ(ExecuteRefusal("print(1)").status, 400);
}

TEST(ExecuteRequest, SessionIdAndLimits) {
  exec::RunRequest request;
  std::string session_id = "stale";
  EXPECT_FALSE(ParseExecuteRequest({{"code", "1"}, {"session_id", "0a1b-c_D"}, {"timeout_s", 5}},
                                   1 << 20, request, session_id));
  EXPECT_EQ(session_id, "0a1b-c_D");
  EXPECT_FALSE(ParseExecuteRequest({{"code", "1"}}, 1 << 20, request, session_id));
  EXPECT_EQ(session_id, "");

  auto limits = Request({{"code", "1"}, {"memory_bytes", 268435456}, {"output_bytes", 4096.0}});
  EXPECT_EQ(limits.limits.memory_bytes, 268435456);
  EXPECT_EQ(limits.limits.output_bytes, 4096);
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"memory_bytes", "1G"}}).field, "memory_bytes");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"memory_bytes", 0}}).field, "memory_bytes");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"output_bytes", 1.5}}).field, "output_bytes");

  auto fixed = ExecuteRefusal({{"code", "1"}, {"session_id", "abc"}, {"memory_bytes", 1 << 20}});
  EXPECT_EQ(fixed.status, 400);
  EXPECT_EQ(fixed.field, "memory_bytes");
  EXPECT_THAT(fixed.message, HasSubstr("fixed when it is created"));
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"session_id", 7}}).field, "session_id");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"session_id", "../x"}}).field, "session_id");
  EXPECT_EQ(ExecuteRefusal({{"code", "1"}, {"session_id", ""}}).field, "session_id");
}

TEST(SessionCreateRequest, FieldsAndRefusals) {
  exec::SessionCreateRequest request;
  EXPECT_FALSE(ParseSessionCreateRequest(nullptr, request));
  EXPECT_EQ(request.pool, "");
  EXPECT_FALSE(request.limits.timeout_s);
  EXPECT_FALSE(ParseSessionCreateRequest(json::object(), request));
  EXPECT_FALSE(ParseSessionCreateRequest(
      {{"pool", "big"}, {"timeout_s", 60}, {"memory_bytes", 1 << 30}, {"output_bytes", 65536}},
      request));
  EXPECT_EQ(request.pool, "big");
  EXPECT_EQ(request.limits.timeout_s, 60);
  EXPECT_EQ(request.limits.memory_bytes, 1 << 30);
  EXPECT_EQ(request.limits.output_bytes, 65536);
  auto unknown = ParseSessionCreateRequest({{"ttl", 5}}, request);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->field, "ttl");
  EXPECT_EQ(ParseSessionCreateRequest({{"timeout_s", 0}}, request)->field, "timeout_s");
  EXPECT_EQ(ParseSessionCreateRequest({{"pool", 1}}, request)->field, "pool");
  EXPECT_EQ(ParseSessionCreateRequest(json::array(), request)->status, 400);
}

TEST(SessionErrors, MapToStatuses) {
  EXPECT_EQ(FromSessionError(Error(ErrorCode::kNotFound, "gone"), 2, 429).status, 404);
  EXPECT_EQ(FromSessionError(Error(ErrorCode::kLimit, "4 sessions"), 2, 429).status, 429);
  EXPECT_EQ(FromSessionError(Error(ErrorCode::kLimit, "too big"), 2, 413).status, 413);
  auto busy = FromSessionError(Error(ErrorCode::kBusy, "running"), 3, 429);
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.retry_after_s, 3);
  EXPECT_EQ(FromSessionError(Error(ErrorCode::kConflict, "x"), 2, 429).status, 409);
  auto invalid = FromSessionError(Error(ErrorCode::kInvalidArgument, "path: absolute"), 2, 429);
  EXPECT_EQ(invalid.status, 400);
  EXPECT_EQ(invalid.field, "path");
  EXPECT_EQ(FromSessionError(Error(ErrorCode::kUnavailable, "down"), 2, 429).status, 503);
  EXPECT_EQ(FromSessionError(Error(ErrorCode::kInternal, "bug"), 2, 429).status, 500);
}

TEST(ExecuteRequest, OversizedCodeIs413) {
  auto error = ExecuteRefusal({{"code", std::string(100, 'x')}}, 99);
  EXPECT_EQ(error.status, 413);
  EXPECT_EQ(error.field, "code");
}

TEST(EngineErrors, MapToStatuses) {
  auto invalid = FromEngineError(Error(ErrorCode::kInvalidArgument, "unknown pool \"x\""), 2);
  EXPECT_EQ(invalid.status, 400);
  EXPECT_EQ(invalid.field, "pool");
  EXPECT_EQ(
      FromEngineError(Error(ErrorCode::kInvalidArgument, "files[2].path: must be relative"), 2)
          .field,
      "files[2].path");
  EXPECT_EQ(
      FromEngineError(Error(ErrorCode::kInvalidArgument, "timeout_s: must be above 0"), 2).field,
      "timeout_s");
  auto busy = FromEngineError(Error(ErrorCode::kBusy, "no sandbox within 30 s"), 2);
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.retry_after_s, 2);
  EXPECT_EQ(FromEngineError(Error(ErrorCode::kUnavailable, "engine down"), 2).status, 503);
  EXPECT_EQ(FromEngineError(Error(ErrorCode::kUnavailable, "engine down"), 2).retry_after_s, 0);
  EXPECT_EQ(FromEngineError(Error(ErrorCode::kInternal, "bug"), 2).status, 500);
}

TEST(Sse, EventFraming) {
  EXPECT_EQ(SseEvent("stdout", json{{"text", "a\nb"}}),
            "event: stdout\ndata: {\"text\":\"a\\nb\"}\n\n");
}

TEST(Utf8, StreamDecoderKeepsSplitCharactersWhole) {
  Utf8StreamDecoder decoder;
  EXPECT_EQ(decoder.Feed("caf\xc3"), "caf");
  EXPECT_EQ(decoder.Feed("\xa9 \xe2\x82"), "\xc3\xa9 ");
  EXPECT_EQ(decoder.Feed("\xac"), "\xe2\x82\xac");
  EXPECT_EQ(decoder.Feed("bad \xff!"), "bad \xEF\xBF\xBD!");
  EXPECT_EQ(decoder.Feed("\xf0\x9f"), "");
  EXPECT_EQ(decoder.Flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(RepairUtf8("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

}  // namespace
}  // namespace sandbox::api
