#include "sandbox/core/base64.h"
#include "sandbox/core/utf8.h"
#include "sandbox/mcp/resource_provider.h"
#include "sandbox/mcp/session_tools.h"
#include "session_uri.h"
#include "tool_args.h"

namespace sandbox::mcp {

using json = nlohmann::json;

json SessionDownloadFileTool::Definition() const {
  const std::string description =
      "Fetch one file from a session's working directory (uploaded, or written by code run "
      "there), returned as an embedded resource: text for UTF-8 text files, base64 blob "
      "otherwise; PNG and JPEG images also come as an image you can see. At most " +
      detail::HumanBytes(options_.max_file_bytes) +
      " per file. session_list_files shows what is there. Figures shown with plt.show() come "
      "back with run_python's result already; use this for files the code saved.";
  return {
      {"name", name()},
      {"title", "Download a file from a session"},
      {"description", description},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"session_id", {{"type", "string"}, {"description", "the id session_create returned"}}},
          {"path",
           {{"type", "string"},
            {"description", "relative path in the working directory, e.g. out/plot.png"}}}}},
        {"required", {"session_id", "path"}},
        {"additionalProperties", false}}},
      {"outputSchema",
       {{"type", "object"},
        {"properties",
         {{"session_id", {{"type", "string"}}},
          {"path", {{"type", "string"}}},
          {"size", {{"type", "integer"}}},
          {"mime_type", {{"type", "string"}}},
          {"uri", {{"type", "string"}}}}},
        {"required", {"session_id", "path", "size", "mime_type", "uri"}}}},
      {"annotations",
       {{"title", "Download a file from a session"},
        {"readOnlyHint", true},
        {"destructiveHint", false},
        {"idempotentHint", true},
        {"openWorldHint", false}}}};
}

Result<json> SessionDownloadFileTool::Call(const json& arguments, ToolContext& context) {
  SANDBOX_RETURN_IF_ERROR(detail::CheckArguments(arguments, {"session_id", "path"}));
  auto id = detail::SessionIdArgument(arguments);
  if (!id.ok()) return id.error();
  auto path = detail::RequiredString(arguments, "path", "a relative path, e.g. out/plot.png");
  if (!path.ok()) return path.error();
  auto file = sessions_.GetFile(context.principal, *id, *path);
  if (!file.ok()) {
    return SessionToolFailure(file.error(), *id, options_,
                              file.error().code() == ErrorCode::kNotFound
                                  ? "\n(session_list_files shows the session's files.)"
                                  : "");
  }
  const std::string mime =
      file->mime_type.empty() ? std::string("application/octet-stream") : file->mime_type;
  const std::string file_path = file->path.empty() ? *path : file->path;
  const std::string uri = SessionFileUri(*id, file_path);
  const auto size = static_cast<std::int64_t>(file->data.size());
  json resource = ResourceContents(uri, mime, file->data);
  const bool is_text = resource.contains("text");
  std::string text = RepairUtf8(file_path) + " from session " + *id + ": " +
                     detail::HumanBytes(size) + ", " + mime + ", attached as " +
                     (is_text ? "text" : "base64 data") + " (" + uri + ").";
  json content = json::array({{{"type", "text"}, {"text", text}}});
  if (mime == "image/png" || mime == "image/jpeg") {
    content.push_back({{"type", "image"}, {"data", Base64Encode(file->data)}, {"mimeType", mime}});
  }
  content.push_back({{"type", "resource"}, {"resource", std::move(resource)}});
  return json{{"content", std::move(content)},
              {"structuredContent",
               {{"session_id", *id},
                {"path", RepairUtf8(file_path)},
                {"size", size},
                {"mime_type", mime},
                {"uri", uri}}},
              {"isError", false}};
}

}  // namespace sandbox::mcp
