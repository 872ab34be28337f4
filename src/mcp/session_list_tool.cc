#include "sandbox/exec/session_json.h"
#include "sandbox/mcp/session_tools.h"
#include "tool_args.h"

namespace sandbox::mcp {

using json = nlohmann::json;

json SessionListTool::Definition() const {
  const std::string description =
      "List your persistent Python sessions (oldest first): session_id, pool, age, idle time, "
      "time until it expires, memory in use and its limit, runs, restarts, and whether a call "
      "is running in it now. A session expires after " +
      detail::ExactSeconds(options_.idle_timeout.count()) +
      " without a call. Use it to find a session_id again, or to see which session to close "
      "when session_create says the limit of " +
      std::to_string(options_.max_per_principal) + " is reached.";
  return {{"name", name()},
          {"title", "List Python sessions"},
          {"description", description},
          {"inputSchema",
           {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}}},
          {"outputSchema",
           {{"type", "object"},
            {"properties",
             {{"sessions", {{"type", "array"}, {"items", exec::SessionInfoSchema()}}},
              {"max_sessions", {{"type", "integer"}}}}},
            {"required", {"sessions", "max_sessions"}}}},
          {"annotations",
           {{"title", "List Python sessions"},
            {"readOnlyHint", true},
            {"destructiveHint", false},
            {"idempotentHint", true},
            {"openWorldHint", false}}}};
}

Result<json> SessionListTool::Call(const json& arguments, ToolContext& context) {
  SANDBOX_RETURN_IF_ERROR(detail::CheckArguments(arguments, {}));
  auto sessions = sessions_.List(context.principal);
  if (!sessions.ok()) return SessionToolFailure(sessions.error(), "", options_);
  json list = json::array();
  std::string text;
  for (const auto& info : *sessions) {
    list.push_back(exec::SessionInfoJson(info));
    text += "- " + DescribeSession(info) + "\n";
  }
  if (sessions->empty()) {
    text = "You have no sessions. Start one with session_create.";
  } else {
    text = std::to_string(sessions->size()) + " of at most " +
           std::to_string(options_.max_per_principal) + " sessions:\n" + text;
  }
  return detail::ToolSuccess(
      text, {{"sessions", std::move(list)}, {"max_sessions", options_.max_per_principal}});
}

}  // namespace sandbox::mcp
