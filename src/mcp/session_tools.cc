#include "sandbox/mcp/session_tools.h"

#include <algorithm>

#include "sandbox/core/utf8.h"
#include "tool_args.h"

namespace sandbox::mcp {

std::vector<std::unique_ptr<Tool>> MakeSessionTools(exec::SessionService& sessions,
                                                    const SessionToolOptions& options) {
  std::vector<std::unique_ptr<Tool>> tools;
  tools.push_back(std::make_unique<SessionCreateTool>(sessions, options));
  tools.push_back(std::make_unique<SessionListTool>(sessions, options));
  tools.push_back(std::make_unique<SessionCloseTool>(sessions, options));
  tools.push_back(std::make_unique<SessionUploadFileTool>(sessions, options));
  tools.push_back(std::make_unique<SessionListFilesTool>(sessions, options));
  tools.push_back(std::make_unique<SessionDownloadFileTool>(sessions, options));
  return tools;
}

Result<nlohmann::json> SessionToolFailure(const Error& error, const std::string& session_id,
                                          const SessionToolOptions& options,
                                          const std::string& hint) {
  if (error.code() == ErrorCode::kInvalidArgument) return error;
  return detail::ToolError(SessionFailureText(error, session_id, options) + hint);
}

std::string SessionFailureText(const Error& error, const std::string& session_id,
                               const SessionToolOptions& options) {
  std::string message = RepairUtf8(error.message());
  switch (error.code()) {
    case ErrorCode::kNotFound:
      if (session_id.empty()) return message;
      return message + "\nSessions end when closed, after " +
             detail::ExactSeconds(options.idle_timeout.count()) + " without a call, or " +
             detail::ExactSeconds(options.max_lifetime.count()) +
             " after creation. session_list shows your live sessions; session_create starts a "
             "new one (upload its files again).";
    case ErrorCode::kLimit:
      return message;
    case ErrorCode::kBusy:
      if (session_id.empty()) return message + "\nNo sandbox was free in time; try again shortly.";
      return message +
             "\nCalls on one session run one at a time: wait for the running call to "
             "finish, then retry.";
    case ErrorCode::kRateLimited:
      return "Rate limited: " + message + "\nWait " +
             std::to_string(std::max(error.retry_after_s(), 1)) +
             " s before the next call; runs of other tokens are not affected.";
    case ErrorCode::kUnavailable:
      return "The sandbox engine is unavailable: " + message + "\nTry again later.";
    case ErrorCode::kCancelled:
      return "Cancelled: " + message;
    default:
      return "The sandbox failed: " + RepairUtf8(error.ToString());
  }
}

std::string DescribeSession(const exec::SessionInfo& info) {
  auto seconds = [](std::int64_t ms) {
    return detail::HumanSeconds(static_cast<double>(ms) / 1e3);
  };
  std::string line = RepairUtf8(info.id) + ": pool " + RepairUtf8(info.pool) + ", age " +
                     seconds(info.age_ms) + ", idle " + seconds(info.idle_ms) + ", expires in " +
                     seconds(info.expires_in_ms) + ", memory ";
  line += info.memory_bytes ? detail::HumanBytes(*info.memory_bytes) : std::string("unknown");
  line += " of " + detail::HumanBytes(info.memory_limit_bytes) + ", " + std::to_string(info.runs) +
          (info.runs == 1 ? " run" : " runs") + ", " + std::to_string(info.restarts) +
          (info.restarts == 1 ? " restart" : " restarts");
  if (info.busy) line += ", busy (a call is running)";
  return line;
}

}  // namespace sandbox::mcp
