#include "sandbox/core/utf8.h"
#include "sandbox/exec/session_json.h"
#include "sandbox/mcp/session_tools.h"
#include "session_uri.h"
#include "tool_args.h"

namespace sandbox::mcp {

using json = nlohmann::json;

json SessionListFilesTool::Definition() const {
  json file_schema = exec::SessionFileSchema();
  file_schema["properties"]["uri"] = {
      {"type", "string"}, {"description", "the file as an MCP resource (resources/read)"}};
  return {
      {"name", name()},
      {"title", "List a session's files"},
      {"description",
       "List the files in a session's working directory (uploaded, or written by code run "
       "there): path, size, MIME type, modification time and resource URI. Fetch one with "
       "session_download_file."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"session_id", {{"type", "string"}, {"description", "the id session_create returned"}}}}},
        {"required", {"session_id"}},
        {"additionalProperties", false}}},
      {"outputSchema",
       {{"type", "object"},
        {"properties",
         {{"session_id", {{"type", "string"}}},
          {"files", {{"type", "array"}, {"items", file_schema}}},
          {"truncated",
           {{"type", "boolean"}, {"description", "more files exist than were listed"}}}}},
        {"required", {"session_id", "files", "truncated"}}}},
      {"annotations",
       {{"title", "List a session's files"},
        {"readOnlyHint", true},
        {"destructiveHint", false},
        {"idempotentHint", true},
        {"openWorldHint", false}}}};
}

Result<json> SessionListFilesTool::Call(const json& arguments, ToolContext& context) {
  SANDBOX_RETURN_IF_ERROR(detail::CheckArguments(arguments, {"session_id"}));
  auto id = detail::SessionIdArgument(arguments);
  if (!id.ok()) return id.error();
  auto listed = sessions_.ListFiles(context.principal, *id);
  if (!listed.ok()) return SessionToolFailure(listed.error(), *id, options_);
  json files = json::array();
  std::string text;
  for (const auto& file : listed->files) {
    json entry = exec::SessionFileJson(file);
    entry["uri"] = SessionFileUri(*id, file.path);
    text += "- " + RepairUtf8(file.path) + " (" + detail::HumanBytes(file.size) + ", " +
            entry["mime_type"].get<std::string>() + ")\n";
    files.push_back(std::move(entry));
  }
  if (listed->files.empty()) {
    text = "Session " + *id + " has no files in its working directory.";
  } else {
    text = "Files of session " + *id + ":\n" + text;
  }
  if (listed->truncated) text += "[more files exist than are listed]\n";
  return detail::ToolSuccess(
      text, {{"session_id", *id}, {"files", std::move(files)}, {"truncated", listed->truncated}});
}

}  // namespace sandbox::mcp
