// The MCP tools of stateful sessions, over exec::SessionService (one .cc per tool):
//
//   session_create         {pool?, timeout_s?, memory_bytes?, output_bytes?} -> a session
//   session_list           {} -> the caller's sessions (age, idle time, expiry, memory, runs)
//   session_close          {session_id}
//   session_upload_file    {session_id, path, content_base64 | content_text}
//   session_list_files     {session_id}
//   session_download_file  {session_id, path} -> the file as an embedded resource (text or
//                          blob); PNG and JPEG images also as an image block
//
// Code runs in a session through run_python's session_id (run_python_tool.h). Every call is
// scoped by ToolContext::principal: another principal's session is "not found".
// Arguments are strict (unknown or mistyped ones are JSON-RPC -32602 naming the field), as are
// the engine's kInvalidArgument refusals; every other refusal (not found, limits, busy, engine
// down) is a result with isError: true whose text says what to do next.
// The tools are registered only when the server has sessions (sessions.enabled).
// Thread-safety: Call() may run on many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/exec/session_service.h"
#include "sandbox/mcp/tool.h"

namespace sandbox::mcp {

// Figures shown in the tool descriptions and texts, so a model knows the rules up front.
struct SessionToolOptions {
  std::chrono::seconds idle_timeout{900};
  std::chrono::seconds max_lifetime{14400};
  int max_per_principal = 4;
  std::int64_t max_file_bytes = 16LL << 20;    // one uploaded or downloaded file
  std::int64_t max_upload_bytes = 32LL << 20;  // one upload call
  // The default pool's limits.
  double default_timeout_s = 30;
  double max_timeout_s = 300;
  std::int64_t memory_bytes = 512LL << 20;
  std::int64_t max_memory_bytes = 2LL << 30;
  std::int64_t output_bytes = 1LL << 20;
};

class SessionCreateTool final : public Tool {
 public:
  SessionCreateTool(exec::SessionService& sessions, SessionToolOptions options)
      : sessions_(sessions), options_(options) {}
  std::string name() const override { return "session_create"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::SessionService& sessions_;
  const SessionToolOptions options_;
};

class SessionListTool final : public Tool {
 public:
  SessionListTool(exec::SessionService& sessions, SessionToolOptions options)
      : sessions_(sessions), options_(options) {}
  std::string name() const override { return "session_list"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::SessionService& sessions_;
  const SessionToolOptions options_;
};

class SessionCloseTool final : public Tool {
 public:
  SessionCloseTool(exec::SessionService& sessions, SessionToolOptions options)
      : sessions_(sessions), options_(options) {}
  std::string name() const override { return "session_close"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::SessionService& sessions_;
  const SessionToolOptions options_;
};

class SessionUploadFileTool final : public Tool {
 public:
  SessionUploadFileTool(exec::SessionService& sessions, SessionToolOptions options)
      : sessions_(sessions), options_(options) {}
  std::string name() const override { return "session_upload_file"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::SessionService& sessions_;
  const SessionToolOptions options_;
};

class SessionListFilesTool final : public Tool {
 public:
  SessionListFilesTool(exec::SessionService& sessions, SessionToolOptions options)
      : sessions_(sessions), options_(options) {}
  std::string name() const override { return "session_list_files"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::SessionService& sessions_;
  const SessionToolOptions options_;
};

class SessionDownloadFileTool final : public Tool {
 public:
  SessionDownloadFileTool(exec::SessionService& sessions, SessionToolOptions options)
      : sessions_(sessions), options_(options) {}
  std::string name() const override { return "session_download_file"; }
  nlohmann::json Definition() const override;
  Result<nlohmann::json> Call(const nlohmann::json& arguments, ToolContext& context) override;

 private:
  exec::SessionService& sessions_;
  const SessionToolOptions options_;
};

// The six tools above, in the order tools/list shows them.
std::vector<std::unique_ptr<Tool>> MakeSessionTools(exec::SessionService& sessions,
                                                    const SessionToolOptions& options);

// The text of a refusal by the SessionService that is not the caller's input error: what went
// wrong and what the model can do next (e.g. kNotFound: the session ended; session_list shows
// the live ones). Shared with run_python.
std::string SessionFailureText(const Error& error, const std::string& session_id,
                               const SessionToolOptions& options);

// A session tool's answer to a refusal by the SessionService: the caller's own input error
// (kInvalidArgument) stays an error, which the dispatcher turns into -32602; anything else is a
// tool result with isError, SessionFailureText and then `hint` (empty, or a line starting "\n").
Result<nlohmann::json> SessionToolFailure(const Error& error, const std::string& session_id,
                                          const SessionToolOptions& options,
                                          const std::string& hint = {});

// One line about a session for a model to read: id, pool, age, idle time, expiry, memory,
// runs, restarts, busy.
std::string DescribeSession(const exec::SessionInfo& info);

}  // namespace sandbox::mcp
