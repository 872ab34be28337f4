#include "run_result_format.h"

#include <algorithm>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/core/json_size.h"
#include "sandbox/core/utf8.h"
#include "sandbox/exec/answer_bound.h"
#include "sandbox/exec/run_result_json.h"
#include "sandbox/mcp/resource_provider.h"
#include "session_uri.h"
#include "tool_args.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

void AppendSection(std::string& out, std::string_view title, std::string_view body) {
  out += "--- ";
  out += title;
  out += " ---\n";
  out += body;
  if (!body.empty() && body.back() != '\n') out += '\n';
}

std::string FormatTraceback(const exec::Traceback& tb) {
  std::string out;
  if (!tb.frames.empty()) {
    out += "Traceback (most recent call last):\n";
    for (const auto& frame : tb.frames) {
      out += "  File \"" + RepairUtf8(frame.file) + "\", line " + std::to_string(frame.line) +
             ", in " + RepairUtf8(frame.function) + "\n";
    }
  }
  out += RepairUtf8(tb.type);
  if (!tb.message.empty()) out += ": " + RepairUtf8(tb.message);
  out += '\n';
  return out;
}

std::string Summary(const exec::RunResult& r) {
  std::string out = "verdict: " + std::string(exec::VerdictName(r.verdict));
  if (r.verdict != exec::Verdict::kInternal) {
    out += ", exit code " + std::to_string(r.exit_code);
    if (r.signal) out += " (signal " + std::to_string(*r.signal) + ")";
  }
  out += ", " + std::to_string(r.duration_ms) + " ms";
  if (!r.detail.empty()) out += "\n" + RepairUtf8(r.detail);
  return out + "\n";
}

}  // namespace

std::string TextBlockExcerpt(std::string_view text, std::size_t max_escaped,
                             std::string_view field) {
  if (JsonEscapedBytes(text) <= max_escaped) return std::string(text);
  const std::size_t head = JsonPrefixWithin(text, max_escaped * 3 / 4);
  const std::size_t tail = std::max(head, JsonSuffixWithin(text, max_escaped / 4));
  std::string out(text.substr(0, head));
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "[... " + std::to_string(tail - head) + " bytes not repeated here; structuredContent." +
         std::string(field) + " has the whole output ...]\n";
  out.append(text.substr(tail));
  return out;
}

std::string FileUri(std::string_view run_id, std::string_view path) {
  return "sandbox://runs/" + std::string(run_id) + "/files/" + PercentEncodePath(path);
}

json RunPythonOutputSchema() { return exec::RunResultSchema(exec::RunResultShape::kSummary); }

json FormatRunResult(exec::RunResult r, std::string_view run_id) {
  // The output moves into structuredContent (whole, valid UTF-8); the text block shows it from
  // there.
  json structured = exec::RunResultJson(r, exec::RunResultShape::kSummary);
  const auto& out_text = structured["stdout"].get_ref<const std::string&>();
  const auto& err_text = structured["stderr"].get_ref<const std::string&>();
  // The text block's share of the output: whole when short, head and tail when not; stderr
  // keeps at least a quarter (a traceback's last lines are what a model needs).
  std::size_t err_share = std::min(JsonEscapedBytes(err_text), exec::kTextBlockOutputBytes / 4);
  std::string out_shown =
      TextBlockExcerpt(out_text, exec::kTextBlockOutputBytes - err_share, "stdout");
  std::string err_shown = TextBlockExcerpt(
      err_text,
      exec::kTextBlockOutputBytes -
          std::min(JsonEscapedBytes(out_shown), exec::kTextBlockOutputBytes - err_share),
      "stderr");
  const bool err_shown_whole = err_shown.size() == err_text.size();
  const bool in_session = !r.session_id.empty();

  json content = json::array();
  std::string text;
  // Said first: a model must not go on as if its earlier state still existed.
  if (r.session_reset) {
    text += "[SESSION RESTARTED EMPTY: this run ended the interpreter of session " +
            RepairUtf8(r.session_id) +
            ", so the session was restarted empty: no variables, no imports, no files. The "
            "session_id still works: redo the set-up (imports, loading or uploading data) "
            "before going on.";
    if (!r.session_notice.empty()) text += " (" + RepairUtf8(r.session_notice) + ")";
    text += "]\n";
  } else if (!r.session_notice.empty()) {
    text += "[SESSION RESTARTED EMPTY before this call: " + RepairUtf8(r.session_notice) +
            ". Variables, imports and files from earlier calls in session " +
            RepairUtf8(r.session_id) + " are gone; this run started from scratch.]\n";
  }
  text += Summary(r);
  if (!out_shown.empty()) AppendSection(text, "stdout", out_shown);
  if (!err_shown.empty()) AppendSection(text, "stderr", err_shown);
  if (r.value) AppendSection(text, "value", RepairUtf8(*r.value));
  if (r.traceback) {
    // Python already printed the traceback (with source lines) to stderr; repeat it only when
    // stderr does not show it.
    std::string last_line = RepairUtf8(r.traceback->type);
    if (!r.traceback->message.empty()) last_line += ": " + RepairUtf8(r.traceback->message);
    if (!err_shown_whole || err_text.find(last_line) == std::string::npos) {
      AppendSection(text, "traceback", FormatTraceback(*r.traceback));
    }
  }
  if (out_shown.empty() && err_text.empty() && !r.value && !r.traceback) text += "(no output)\n";
  if (r.output_truncated) {
    text += "[output truncated: the run reached its output limit]\n";
  }

  json images = json::array();
  for (auto& image : r.images) {
    images.push_back(
        {{"type", "image"}, {"data", Base64Encode(image.data)}, {"mimeType", image.mime_type}});
    std::string().swap(image.data);  // its base64 is in the answer now
  }
  if (!r.images.empty()) {
    text += "[" + std::to_string(r.images.size()) +
            (r.images.size() == 1 ? " figure" : " figures") + " attached as image" +
            (r.images.size() == 1 ? "" : "s") + "]\n";
  }
  if (r.images_truncated) {
    text +=
        "[figures dropped: more, larger or heavier (in PNG bytes) than a run may return; draw "
        "fewer or smaller figures]\n";
  }

  json resources = json::array();
  if (!r.files.empty()) text += "--- files ---\n";
  for (auto& file : r.files) {
    const std::string path = RepairUtf8(file.path);
    const std::string mime = file.mime_type.empty() ? "application/octet-stream" : file.mime_type;
    // A session's files stay readable (resources/read) under the session's URI.
    const std::string uri =
        in_session ? SessionFileUri(r.session_id, file.path) : FileUri(run_id, file.path);
    text += path + " (" + detail::HumanBytes(file.size) + ", " + mime + ") " + uri + "\n";
    resources.push_back(
        {{"type", "resource"}, {"resource", ResourceContents(uri, mime, file.data)}});
    std::string().swap(file.data);
  }
  if (r.files_truncated) text += "[more files were produced than can be returned]\n";

  content.push_back({{"type", "text"}, {"text", std::move(text)}});
  for (auto& block : images) content.push_back(std::move(block));
  for (auto& block : resources) content.push_back(std::move(block));
  return {{"content", std::move(content)},
          {"structuredContent", std::move(structured)},
          {"isError", r.verdict != exec::Verdict::kOk}};
}

}  // namespace sandbox::mcp
