// Tool: one MCP tool (run_python, sandbox_info, the session tools). The dispatcher validates
// the envelope of tools/call and hands the arguments object to the tool.
// Thread-safety: Call() is invoked from many threads at once; implementations must allow it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/core/result.h"
#include "sandbox/exec/cancel_token.h"
#include "sandbox/mcp/request_meta.h"
#include "sandbox/mcp/request_notifier.h"

namespace sandbox::mcp {

class Task;

// Whether a tool's call may become a task of the tasks extension (its tools/list
// execution.taskSupport in 2026-07-28): never, when the client declares the extension, or only
// as a task (a client without the extension is refused with -32021).
enum class TaskSupport { kForbidden, kOptional, kRequired };

// What a tool gets besides its arguments; valid for the duration of Call().
struct ToolContext {
  const exec::CancelToken& cancel;  // fires on notifications/cancelled or a dropped stream
  RequestNotifier& notifier;        // progress and log notifications of this request
  const std::string& principal;     // whom the client acts for (Session::principal())
  // What a 2026-07-28 request declared about itself; nullptr for the legacy era (whose
  // capabilities came with initialize and are not kept).
  const RequestMeta* meta = nullptr;
  // 2026-07-28 multi round-trip (a tool may answer {"resultType": "input_required",
  // "inputRequests": {...}, "requestState": "..."}): the client's answers to an earlier round's
  // input requests, by key (an object, empty when none), and that round's requestState as the
  // tool wrote it (the dispatcher seals it on the way out and checks it on the way back, so a
  // tool never sees a value the client made up; empty when none).
  nlohmann::json input_responses = nlohmann::json::object();
  std::string request_state;
  // The task this call runs as, nullptr when it runs inside its request. A task run may ask the
  // client for input while it runs (Task::AwaitInput) and reports output for tasks/get.
  Task* task = nullptr;
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual std::string name() const = 0;
  // The tools/list entry: name, title?, description, inputSchema, outputSchema?, annotations?.
  virtual nlohmann::json Definition() const = 0;
  // Returns a CallToolResult ({content, structuredContent?, isError?}). Failures of the work
  // itself are results with isError: true. An Error return becomes a JSON-RPC error:
  // kInvalidArgument -> -32602 (the message names the field), anything else -> -32603.
  virtual Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) = 0;
  // Client capabilities the tool cannot work without, as a ClientCapabilities object (e.g.
  // {"sampling": {}}). A 2026-07-28 call that does not declare one of them is refused with
  // -32021 before the tool runs.
  virtual nlohmann::json RequiredClientCapabilities() const { return nlohmann::json::object(); }
  virtual TaskSupport task_support() const { return TaskSupport::kForbidden; }
  // Runs before a call becomes a task, inside its request: what must be answered at once
  // rather than by a task (invalid arguments, a multi round-trip question). nullopt: go on and
  // create the task. Same error mapping as Call().
  virtual Result<std::optional<nlohmann::json>> Prepare(const nlohmann::json& /*arguments*/,
                                                        ToolContext& /*context*/) {
    return std::optional<nlohmann::json>();
  }
};

}  // namespace sandbox::mcp
