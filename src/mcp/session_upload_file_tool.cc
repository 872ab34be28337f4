#include "sandbox/core/base64.h"
#include "sandbox/core/utf8.h"
#include "sandbox/exec/session_json.h"
#include "sandbox/mcp/session_tools.h"
#include "session_uri.h"
#include "tool_args.h"

namespace sandbox::mcp {

using json = nlohmann::json;

json SessionUploadFileTool::Definition() const {
  const std::string description =
      "Write a file into a session's working directory (creating directories, replacing an "
      "existing file), so code run there with run_python can open it by its relative path, "
      "e.g. pd.read_csv('data/input.csv'). Give the content either as content_text (UTF-8 "
      "text such as CSV, JSON or source code) or as content_base64 (any bytes). At most " +
      detail::HumanBytes(options_.max_file_bytes) +
      " per file. Files stay until the session ends; session_list_files lists them.";
  json file_schema = exec::SessionFileSchema();
  file_schema["properties"]["uri"] = {{"type", "string"}};
  return {
      {"name", name()},
      {"title", "Upload a file to a session"},
      {"description", description},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"session_id", {{"type", "string"}, {"description", "the id session_create returned"}}},
          {"path",
           {{"type", "string"},
            {"description", "relative path in the working directory, e.g. data/input.csv"}}},
          {"content_text",
           {{"type", "string"},
            {"description", "the content as UTF-8 text (give this or content_base64)"}}},
          {"content_base64",
           {{"type", "string"},
            {"description", "the content, standard base64 (give this or content_text)"}}}}},
        // One of content_text / content_base64 is required; not said with a top-level
        // oneOf, which several model APIs refuse in tool schemas.
        {"required", {"session_id", "path"}},
        {"additionalProperties", false}}},
      {"outputSchema",
       {{"type", "object"},
        {"properties",
         {{"session_id", {{"type", "string"}}},
          {"files", {{"type", "array"}, {"items", file_schema}}}}},
        {"required", {"session_id", "files"}}}},
      {"annotations",
       {{"title", "Upload a file to a session"},
        {"readOnlyHint", false},
        {"destructiveHint", true},
        {"idempotentHint", true},
        {"openWorldHint", false}}}};
}

Result<json> SessionUploadFileTool::Call(const json& arguments, ToolContext& context) {
  SANDBOX_RETURN_IF_ERROR(
      detail::CheckArguments(arguments, {"session_id", "path", "content_base64", "content_text"}));
  auto id = detail::SessionIdArgument(arguments);
  if (!id.ok()) return id.error();
  auto path = detail::RequiredString(arguments, "path", "a relative path, e.g. data/input.csv");
  if (!path.ok()) return path.error();
  const bool has_text = arguments.contains("content_text");
  const bool has_base64 = arguments.contains("content_base64");
  if (has_text == has_base64) {
    return detail::Invalid(
        std::string(has_text ? "content_text, content_base64: give only one of them"
                             : "content_text: required (or content_base64 for binary data)"));
  }
  std::string content;
  if (has_text) {
    if (!arguments["content_text"].is_string()) {
      return detail::Invalid("content_text: expected a string");
    }
    content = arguments["content_text"].get<std::string>();
  } else {
    if (!arguments["content_base64"].is_string()) {
      return detail::Invalid("content_base64: expected a string");
    }
    auto bytes = Base64Decode(arguments["content_base64"].get<std::string>());
    if (!bytes.ok()) return detail::Invalid("content_base64: " + bytes.error().message());
    content = std::move(*bytes);
  }
  const auto size = static_cast<std::int64_t>(content.size());
  if (size > options_.max_file_bytes) {
    return detail::ToolError(
        "The file is " + detail::HumanBytes(size) + ", above the limit of " +
        detail::HumanBytes(options_.max_file_bytes) +
        " per uploaded file. Upload it in parts and join them in the session with run_python, "
        "or produce the data inside the session.");
  }
  auto written = sessions_.PutFiles(context.principal, *id, {exec::InputFile{*path, content}});
  if (!written.ok()) return SessionToolFailure(written.error(), *id, options_);
  json files = json::array();
  std::string text;
  for (const auto& file : *written) {
    json entry = exec::SessionFileJson(file);
    entry["uri"] = SessionFileUri(*id, file.path);
    files.push_back(std::move(entry));
    text += "Wrote " + RepairUtf8(file.path) + " (" + detail::HumanBytes(file.size) + ", " +
            (file.mime_type.empty() ? "application/octet-stream" : file.mime_type) + ")";
  }
  if (written->empty()) text = "Wrote " + RepairUtf8(*path);
  text += " into session " + *id + ". Code run there opens it by its relative path, e.g. open(" +
          json(RepairUtf8(*path)).dump() + ").";
  return detail::ToolSuccess(text, {{"session_id", *id}, {"files", std::move(files)}});
}

}  // namespace sandbox::mcp
