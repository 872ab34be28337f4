// The run result's one writer (RunResultJson) in both shapes, against the schema's field list
// (run_schema.h, from the protocol's schema) and the JSON Schema built from it: each shape
// writes exactly the fields its schema names, always its required ones, with their types.
#include "sandbox/exec/run_result_json.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace sandbox::exec {
namespace {

using nlohmann::json;

RunResult WithVerdict(Verdict verdict, int exit_code) {
  RunResult r;
  r.verdict = verdict;
  r.exit_code = exit_code;
  return r;
}

// A result with nothing optional set, and one with everything set (in a session).
std::vector<RunResult> Results() {
  RunResult bare = WithVerdict(Verdict::kInternal, -1);
  RunResult full = WithVerdict(Verdict::kError, 1);
  full.signal = 9;
  full.stdout_text = "out";
  full.stderr_text = "err";
  full.duration_ms = 7;
  full.value = "42";
  full.traceback = Traceback{"ValueError", "x", {{"<cell>", 1, "<module>"}}};
  full.images.push_back(Image{"image/png", 2, 3, "PNG"});
  full.files.push_back(OutputFile{"a.txt", 2, "text/plain", "hi"});
  full.output_truncated = full.files_truncated = full.images_truncated = true;
  full.detail = "exit status 1";
  full.pool = "default";
  full.engine = "local";
  full.session_id = "s1";
  full.session_reset = true;
  full.session_notice = "restarted";
  RunResult session_ok = WithVerdict(Verdict::kOk, 0);
  session_ok.session_id = "s2";
  return {bare, full, session_ok};
}

bool HasType(const json& value, const json& type) {
  const std::string name = type.get<std::string>();
  if (name == "string") return value.is_string();
  if (name == "integer") return value.is_number_integer();
  if (name == "boolean") return value.is_boolean();
  if (name == "array") return value.is_array();
  if (name == "object") return value.is_object();
  if (name == "null") return value.is_null();
  return false;
}

TEST(RunResultJsonTest, EachShapeWritesWhatItsSchemaNames) {
  for (auto shape : {RunResultShape::kSummary, RunResultShape::kComplete}) {
    const json schema = RunResultSchema(shape);
    const json& properties = schema["properties"];
    std::set<std::string> named;
    for (const auto& [name, property] : properties.items()) named.insert(name);
    for (RunResult r : Results()) {
      const json out = RunResultJson(r, shape);
      for (const auto& [name, value] : out.items()) {
        ASSERT_TRUE(named.count(name)) << name << " is written but not in the schema";
        const json& type = properties[name]["type"];
        const bool typed = type.is_array() ? HasType(value, type[0]) || HasType(value, type[1])
                                           : HasType(value, type);
        EXPECT_TRUE(typed) << name << ": " << value.dump() << " is not " << type.dump();
      }
      for (const auto& name : schema["required"]) {
        EXPECT_TRUE(out.contains(name.get<std::string>())) << name << " is required";
      }
    }
  }
}

TEST(RunResultJsonTest, TheSchemaIsTheFieldList) {
  // Every field of the protocol schema's run_result is in a shape, and each shape's schema
  // names exactly the fields present in it.
  for (const auto& field : run_result::kFields) {
    const bool in_summary = field.summary != run_result::Presence::kAbsent;
    const bool in_complete = field.complete != run_result::Presence::kAbsent;
    EXPECT_TRUE(in_summary || in_complete) << field.name;
    const std::string name(field.name);
    EXPECT_EQ(RunResultSchema(RunResultShape::kSummary)["properties"].contains(name), in_summary);
    EXPECT_EQ(RunResultSchema(RunResultShape::kComplete)["properties"].contains(name), in_complete);
  }
  // The complete shape always has every field; the summary leaves what is absent out.
  EXPECT_EQ(RunResultSchema(RunResultShape::kComplete)["required"].size(),
            RunResultSchema(RunResultShape::kComplete)["properties"].size());
  EXPECT_EQ(RunResultSchema(RunResultShape::kSummary)["properties"]["verdict"]["enum"].size(),
            kVerdictNames.size());
}

TEST(RunResultJsonTest, SummaryLeavesOutWhatIsAbsent) {
  RunResult r = WithVerdict(Verdict::kOk, 0);
  const json out = RunResultJson(r, RunResultShape::kSummary);
  std::set<std::string> keys;
  for (const auto& [name, value] : out.items()) keys.insert(name);
  EXPECT_EQ(keys, (std::set<std::string>{"verdict", "exit_code", "stdout", "stderr", "duration_ms",
                                         "images", "files"}));
  // A session's run says whether it reset the session, also when it did not.
  r.session_id = "s";
  EXPECT_EQ(RunResultJson(r, RunResultShape::kSummary)["session_reset"], false);
  EXPECT_FALSE(RunResultJson(r, RunResultShape::kSummary).contains("session_notice"));
}

TEST(RunResultJsonTest, SummaryGivesFiguresAndFilesAsMetadataAndKeepsTheirBytes) {
  RunResult r = WithVerdict(Verdict::kOk, 0);
  r.images.push_back(Image{"image/png", 640, 480, "PNG"});
  r.files.push_back(OutputFile{"out.txt", 2, "", "hi"});
  const json out = RunResultJson(r, RunResultShape::kSummary);
  EXPECT_EQ(out["images"][0],
            json::parse(R"({"mime_type":"image/png","width":640,"height":480,"bytes":3})"));
  EXPECT_EQ(out["files"][0], json::parse(R"({"path":"out.txt","size":2,
                                             "mime_type":"application/octet-stream"})"));
  EXPECT_EQ(r.images[0].data, "PNG");  // for the caller's content blocks
  EXPECT_EQ(r.files[0].data, "hi");
}

TEST(RunResultJsonTest, CompleteSessionFields) {
  RunResult r = WithVerdict(Verdict::kTimeout, -1);
  RunResult copy = r;
  auto plain = RunResultJson(copy, RunResultShape::kComplete);
  EXPECT_TRUE(plain["session_id"].is_null());
  EXPECT_EQ(plain["session_reset"], false);
  EXPECT_TRUE(plain["session_notice"].is_null());
  r.session_id = "abc";
  r.session_reset = true;
  r.session_notice = "restarted after a timeout";
  auto in_session = RunResultJson(r, RunResultShape::kComplete);
  EXPECT_EQ(in_session["session_id"], "abc");
  EXPECT_EQ(in_session["session_reset"], true);
  EXPECT_EQ(in_session["session_notice"], "restarted after a timeout");
}

TEST(RunResultJsonTest, CompleteHasAllFieldsWithBytesInline) {
  RunResult r = WithVerdict(Verdict::kError, 1);
  r.stdout_text = "ok\xc3";  // cut mid-character
  r.stderr_text = "Traceback";
  r.duration_ms = 12;
  r.traceback = Traceback{"ZeroDivisionError", "division by zero", {{"<cell>", 1, "<module>"}}};
  r.images.push_back(Image{"image/png", 640, 480, "PNG"});
  r.files.push_back(OutputFile{"out.txt", 2, "text/plain", "hi"});
  r.detail = "uncaught ZeroDivisionError";
  r.pool = "default";
  auto body = RunResultJson(r, RunResultShape::kComplete);
  EXPECT_EQ(body["verdict"], "error");
  EXPECT_EQ(body["exit_code"], 1);
  EXPECT_TRUE(body["signal"].is_null());
  EXPECT_EQ(body["stdout"], "ok\xEF\xBF\xBD");
  EXPECT_TRUE(body["value"].is_null());
  EXPECT_EQ(body["traceback"]["frames"][0]["line"], 1);
  EXPECT_EQ(
      body["images"][0],
      json::parse(R"({"mime_type":"image/png","width":640,"height":480,"data_base64":"UE5H"})"));
  EXPECT_EQ(body["files"][0],
            json::parse(
                R"({"path":"out.txt","size":2,"mime_type":"text/plain","content_base64":"aGk="})"));
  EXPECT_EQ(body["output_truncated"], false);
  EXPECT_EQ(body["detail"], "uncaught ZeroDivisionError");
  EXPECT_EQ(body["pool"], "default");
  // The bytes left the result as their base64 entered the answer.
  EXPECT_TRUE(r.images[0].data.empty());
  EXPECT_TRUE(r.files[0].data.empty());
}

}  // namespace
}  // namespace sandbox::exec
