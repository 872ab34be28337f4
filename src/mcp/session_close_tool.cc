#include "sandbox/mcp/session_tools.h"
#include "tool_args.h"

namespace sandbox::mcp {

using json = nlohmann::json;

json SessionCloseTool::Definition() const {
  return {
      {"name", name()},
      {"title", "Close a Python session"},
      {"description",
       "Close a persistent Python session and destroy its sandbox: its variables and files "
       "are gone (download what you need first with session_download_file). Close sessions "
       "when done: each holds a sandbox, and there is a limit per client."},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"session_id", {{"type", "string"}, {"description", "the id session_create returned"}}}}},
        {"required", {"session_id"}},
        {"additionalProperties", false}}},
      {"outputSchema",
       {{"type", "object"},
        {"properties", {{"session_id", {{"type", "string"}}}, {"closed", {{"type", "boolean"}}}}},
        {"required", {"session_id", "closed"}}}},
      {"annotations",
       {{"title", "Close a Python session"},
        {"readOnlyHint", false},
        {"destructiveHint", true},
        {"idempotentHint", true},
        {"openWorldHint", false}}}};
}

Result<json> SessionCloseTool::Call(const json& arguments, ToolContext& context) {
  SANDBOX_RETURN_IF_ERROR(detail::CheckArguments(arguments, {"session_id"}));
  auto id = detail::SessionIdArgument(arguments);
  if (!id.ok()) return id.error();
  auto closed = sessions_.Close(context.principal, *id);
  if (!closed.ok()) return SessionToolFailure(closed.error(), *id, options_);
  return detail::ToolSuccess("Session " + *id + " closed; its sandbox and files are gone.",
                             {{"session_id", *id}, {"closed", true}});
}

}  // namespace sandbox::mcp
