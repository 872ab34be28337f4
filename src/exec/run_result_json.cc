#include "sandbox/exec/run_result_json.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/core/utf8.h"

namespace sandbox::exec {
namespace {

using json = nlohmann::json;
using run_result::Presence;

// The schema's field `name`; a name the schema lacks does not compile (a throw cannot be
// evaluated in a constant expression).
consteval const run_result::Field& SchemaField(std::string_view name) {
  for (const auto& field : run_result::kFields) {
    if (field.name == name) return field;
  }
  throw std::invalid_argument("not a field of the schema's run_result");
}

Presence PresenceIn(const run_result::Field& field, RunResultShape shape) {
  return shape == RunResultShape::kSummary ? field.summary : field.complete;
}

// `make()` under the field's name, or by its presence in `shape` when the result has no value
// for it (`has` false): left out (optional) or null (nullable). A required field is always
// written (make() gives its empty value); a field absent from the shape never is.
template <typename Make>
void Put(json& out, const run_result::Field& field, RunResultShape shape, bool has, Make make) {
  switch (PresenceIn(field, shape)) {
    case Presence::kAbsent:
      return;
    case Presence::kRequired:
      out[std::string(field.name)] = make();
      return;
    case Presence::kOptional:
      if (has) out[std::string(field.name)] = make();
      return;
    case Presence::kNullable:
      out[std::string(field.name)] = has ? make() : json(nullptr);
      return;
  }
}

// `s` as valid UTF-8, moved out when it already is (the answer is built once, not copied).
std::string TakeUtf8(std::string& s) {
  return IsValidUtf8(s) ? std::exchange(s, std::string()) : RepairUtf8(s);
}

std::string MimeTypeOrDefault(const std::string& mime_type) {
  return mime_type.empty() ? "application/octet-stream" : mime_type;
}

json TracebackJson(const Traceback& tb) {
  json frames = json::array();
  for (const auto& f : tb.frames) {
    frames.push_back(
        {{"file", RepairUtf8(f.file)}, {"line", f.line}, {"function", RepairUtf8(f.function)}});
  }
  return {{"type", RepairUtf8(tb.type)}, {"message", RepairUtf8(tb.message)}, {"frames", frames}};
}

// The figures: their metadata (summary), or with their bytes, which leave the result (complete).
json ImagesJson(std::vector<Image>& images, RunResultShape shape) {
  json out = json::array();
  for (auto& image : images) {
    if (shape == RunResultShape::kSummary) {
      out.push_back({{"mime_type", image.mime_type},
                     {"width", image.width},
                     {"height", image.height},
                     {"bytes", image.data.size()}});
    } else {
      out.push_back(RunImageJson(image));
      std::string().swap(image.data);
    }
  }
  return out;
}

json FilesJson(std::vector<OutputFile>& files, RunResultShape shape) {
  json out = json::array();
  for (auto& file : files) {
    if (shape == RunResultShape::kSummary) {
      out.push_back({{"path", RepairUtf8(file.path)},
                     {"size", file.size},
                     {"mime_type", MimeTypeOrDefault(file.mime_type)}});
    } else {
      out.push_back(RunFileJson(file));
      std::string().swap(file.data);
    }
  }
  return out;
}

json Typed(const char* type) { return {{"type", type}}; }

// The summary states what a traceback and its frames always have; the complete shape's
// (OpenAPI) never said so.
json TracebackSchema(RunResultShape shape) {
  json frame = {
      {"type", "object"},
      {"properties",
       {{"file", Typed("string")}, {"line", Typed("integer")}, {"function", Typed("string")}}}};
  json properties = {{"type", Typed("string")},
                     {"message", Typed("string")},
                     {"frames", {{"type", "array"}, {"items", frame}}}};
  if (shape == RunResultShape::kComplete) return {{"properties", std::move(properties)}};
  properties["frames"]["items"]["required"] = {"file", "line", "function"};
  return {{"properties", std::move(properties)}, {"required", {"type", "message", "frames"}}};
}

json SummaryImageSchema() {
  return {{"type", "object"},
          {"properties",
           {{"mime_type", Typed("string")},
            {"width", Typed("integer")},
            {"height", Typed("integer")},
            {"bytes", Typed("integer")}}},
          {"required", {"mime_type", "width", "height", "bytes"}}};
}

json SummaryFileSchema() {
  return {{"type", "object"},
          {"properties",
           {{"path", Typed("string")}, {"size", Typed("integer")}, {"mime_type", Typed("string")}}},
          {"required", {"path", "size", "mime_type"}}};
}

}  // namespace

json RunResultJson(RunResult& r, RunResultShape shape) {
  // session_id, session_reset and session_notice belong to a session's run. (An optional is
  // checked again where a lambda reads it: Put calls it only when `has`, which it cannot see.)
  const bool in_session = !r.session_id.empty();
  json out = json::object();
  Put(out, SchemaField("verdict"), shape, true, [&] { return json(VerdictName(r.verdict)); });
  Put(out, SchemaField("exit_code"), shape, true, [&] { return json(r.exit_code); });
  Put(out, SchemaField("signal"), shape, r.signal.has_value(),
      [&] { return r.signal ? json(*r.signal) : json(nullptr); });
  Put(out, SchemaField("stdout"), shape, true, [&] { return json(TakeUtf8(r.stdout_text)); });
  Put(out, SchemaField("stderr"), shape, true, [&] { return json(TakeUtf8(r.stderr_text)); });
  Put(out, SchemaField("duration_ms"), shape, true, [&] { return json(r.duration_ms); });
  Put(out, SchemaField("value"), shape, r.value.has_value(),
      [&] { return r.value ? json(RepairUtf8(*r.value)) : json(nullptr); });
  Put(out, SchemaField("traceback"), shape, r.traceback.has_value(),
      [&] { return r.traceback ? TracebackJson(*r.traceback) : json(nullptr); });
  Put(out, SchemaField("images"), shape, true, [&] { return ImagesJson(r.images, shape); });
  Put(out, SchemaField("files"), shape, true, [&] { return FilesJson(r.files, shape); });
  Put(out, SchemaField("output_truncated"), shape, r.output_truncated,
      [&] { return json(r.output_truncated); });
  Put(out, SchemaField("files_truncated"), shape, r.files_truncated,
      [&] { return json(r.files_truncated); });
  Put(out, SchemaField("images_truncated"), shape, r.images_truncated,
      [&] { return json(r.images_truncated); });
  Put(out, SchemaField("detail"), shape, !r.detail.empty(),
      [&] { return json(RepairUtf8(r.detail)); });
  Put(out, SchemaField("pool"), shape, true, [&] { return json(RepairUtf8(r.pool)); });
  Put(out, SchemaField("engine"), shape, !r.engine.empty(),
      [&] { return json(RepairUtf8(r.engine)); });
  Put(out, SchemaField("session_id"), shape, in_session,
      [&] { return json(RepairUtf8(r.session_id)); });
  Put(out, SchemaField("session_reset"), shape, in_session, [&] { return json(r.session_reset); });
  Put(out, SchemaField("session_notice"), shape, in_session && !r.session_notice.empty(),
      [&] { return json(RepairUtf8(r.session_notice)); });
  return out;
}

json RunImageJson(const Image& image) {
  return {{"mime_type", image.mime_type},
          {"width", image.width},
          {"height", image.height},
          {"data_base64", Base64Encode(image.data)}};
}

json RunFileJson(const OutputFile& file) {
  return {{"path", RepairUtf8(file.path)},
          {"size", file.size},
          {"mime_type", MimeTypeOrDefault(file.mime_type)},
          {"content_base64", Base64Encode(file.data)}};
}

json RunResultSchema(RunResultShape shape) {
  json verdicts = json::array();
  for (auto name : kVerdictNames) verdicts.push_back(name);
  json properties = json::object();
  json required = json::array();
  for (const auto& field : run_result::kFields) {
    const Presence presence = PresenceIn(field, shape);
    if (presence == Presence::kAbsent) continue;
    json property = {{"type", presence == Presence::kNullable ? json::array({field.type, "null"})
                                                              : json(field.type)}};
    const std::string_view description =
        shape == RunResultShape::kSummary ? field.summary_description : field.complete_description;
    if (!description.empty()) property["description"] = description;
    if (field.verdict_values) property["enum"] = verdicts;
    // A nullable field is always there too, null when the result has no value for it.
    if (presence != Presence::kOptional) required.push_back(field.name);
    properties[std::string(field.name)] = std::move(property);
  }
  properties["traceback"].update(TracebackSchema(shape));
  const bool summary = shape == RunResultShape::kSummary;
  properties["images"]["items"] = summary ? SummaryImageSchema() : RunImageSchema();
  properties["files"]["items"] = summary ? SummaryFileSchema() : RunFileSchema();
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", required}};
}

json RunImageSchema() {
  return {{"type", "object"},
          {"properties",
           {{"mime_type", Typed("string")},
            {"width", Typed("integer")},
            {"height", Typed("integer")},
            {"data_base64", Typed("string")}}},
          {"required", {"mime_type", "width", "height", "data_base64"}}};
}

json RunFileSchema() {
  return {{"type", "object"},
          {"properties",
           {{"path", Typed("string")},
            {"size", Typed("integer")},
            {"mime_type", Typed("string")},
            {"content_base64", Typed("string")}}},
          {"required", {"path", "size", "mime_type", "content_base64"}}};
}

}  // namespace sandbox::exec
