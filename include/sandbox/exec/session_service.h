// The session interface of the execution engine, next to ExecutionService: stateful Python
// sessions whose globals, imports and files last from call to call. The protocol layers (MCP
// tools and resources, the HTTP API) depend on this interface only; the engine implements it
// with one dedicated container per session (service/session_manager.h), unit tests use a fake.
//
// Ownership: every session belongs to the principal that created it (the name of the bearer
// token that authenticated the request, "local" for stdio and for a server without a token).
// Every call names its principal; a session of another principal is reported as not found, so
// session ids cannot be probed across tokens.
//
// A run killed by a limit (timeout, memory, output, cancel, a signal, os._exit) leaves the
// session RESTARTED EMPTY: the same session_id keeps working, in a new interpreter with no
// variables and an empty file system. The RunResult says so (session_reset, detail).
//
// Thread-safety: every method may be called from many threads at once. Calls on one session
// are serialized: a call waits (up to the session's acquire timeout) while another call on the
// same session runs, then fails with kBusy.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/exec/cancel_token.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/run_types.h"

namespace sandbox::exec {

// What session_create may ask for. Unset fields take the pool's defaults; values above the
// pool's maxima are kInvalidArgument, never clamped.
struct SessionCreateRequest {
  std::string pool;  // "" = the default pool
  // Defaults for the session's runs. memory_bytes is fixed for the session's lifetime; timeout_s
  // and output_bytes may still be narrowed or raised (up to the pool's maxima) per run.
  LimitOverrides limits;
  // The session's narrowing of its pool's network policy, for its whole life.
  std::optional<NetworkRequest> network;
};

// A snapshot of one session, for session_create and session_list.
struct SessionInfo {
  std::string id;    // server-minted, unguessable (128 random bits, hex)
  std::string pool;  // the pool it was created from
  std::int64_t created_unix_ms = 0;
  std::int64_t age_ms = 0;
  std::int64_t idle_ms = 0;  // since the last call on it ended (0 while busy)
  std::int64_t expires_in_ms =
      0;              // until the idle timeout or the lifetime ends it, first of the two
  bool busy = false;  // a call is running in it now
  int runs = 0;       // runs served since creation, across restarts
  int restarts = 0;   // times it was restarted empty
  std::optional<std::int64_t> memory_bytes;  // the container's memory use; unset if unknown
  std::int64_t memory_limit_bytes = 0;
  double timeout_s = 0;           // default wall time of one run
  std::int64_t output_bytes = 0;  // default output limit of one run
};

// A file in a session's working directory.
struct SessionFile {
  std::string path;  // relative to the working directory
  std::int64_t size = 0;
  std::string mime_type;
  double mtime_unix_s = 0;
};

struct SessionFileList {
  std::vector<SessionFile> files;  // sorted by path
  bool truncated = false;          // more files exist than were listed
};

class SessionService {
 public:
  virtual ~SessionService() = default;

  // Starts a session in its own container. Errors: kInvalidArgument (unknown pool, bad limits),
  // kLimit (the server's or this principal's session limit is reached; the message
  // names the limit and how to free one), kBusy (no container could be had in time),
  // kUnavailable (the engine is down).
  virtual Result<SessionInfo> Create(const std::string& principal,
                                     const SessionCreateRequest& request) = 0;

  // The principal's sessions, oldest first.
  virtual Result<std::vector<SessionInfo>> List(const std::string& principal) = 0;

  virtual Result<SessionInfo> Get(const std::string& principal, const std::string& session_id) = 0;

  // Ends the session and destroys its container. kNotFound for an unknown, expired or foreign
  // id (the message says sessions end after their idle timeout or lifetime).
  virtual Status Close(const std::string& principal, const std::string& session_id) = 0;

  // Runs code in the session. request.pool must be empty or the session's pool;
  // request.limits.memory_bytes must be unset (fixed at creation). Files in request.files are
  // written into the working directory first. Same verdicts as ExecutionService::Run; after a
  // limit kill RunResult::session_reset is true.
  virtual Result<RunResult> Run(const std::string& principal, const std::string& session_id,
                                const RunRequest& request, RunObserver& observer,
                                const CancelToken& cancel) = 0;

  // Writes files into the session's working directory (creating directories, overwriting).
  // Same path rules and size limits as a run's input files.
  virtual Result<std::vector<SessionFile>> PutFiles(const std::string& principal,
                                                    const std::string& session_id,
                                                    const std::vector<InputFile>& files) = 0;

  virtual Result<SessionFileList> ListFiles(const std::string& principal,
                                            const std::string& session_id) = 0;

  // One file's content. kNotFound for a missing file, kInvalidArgument for a bad path or a
  // directory, kLimit for a file above the download limit (the message gives both
  // sizes).
  virtual Result<OutputFile> GetFile(const std::string& principal, const std::string& session_id,
                                     const std::string& path) = 0;

  virtual Status DeleteFile(const std::string& principal, const std::string& session_id,
                            const std::string& path) = 0;
};

// A SessionService that passes every call to `inner`: the base of decorators (fair sharing,
// metrics) that override only what they add to.
class ForwardingSessionService : public SessionService {
 public:
  explicit ForwardingSessionService(SessionService& inner) : inner_(inner) {}
  Result<SessionInfo> Create(const std::string& principal,
                             const SessionCreateRequest& request) override {
    return inner_.Create(principal, request);
  }
  Result<std::vector<SessionInfo>> List(const std::string& principal) override {
    return inner_.List(principal);
  }
  Result<SessionInfo> Get(const std::string& principal, const std::string& session_id) override {
    return inner_.Get(principal, session_id);
  }
  Status Close(const std::string& principal, const std::string& session_id) override {
    return inner_.Close(principal, session_id);
  }
  Result<RunResult> Run(const std::string& principal, const std::string& session_id,
                        const RunRequest& request, RunObserver& observer,
                        const CancelToken& cancel) override {
    return inner_.Run(principal, session_id, request, observer, cancel);
  }
  Result<std::vector<SessionFile>> PutFiles(const std::string& principal,
                                            const std::string& session_id,
                                            const std::vector<InputFile>& files) override {
    return inner_.PutFiles(principal, session_id, files);
  }
  Result<SessionFileList> ListFiles(const std::string& principal,
                                    const std::string& session_id) override {
    return inner_.ListFiles(principal, session_id);
  }
  Result<OutputFile> GetFile(const std::string& principal, const std::string& session_id,
                             const std::string& path) override {
    return inner_.GetFile(principal, session_id, path);
  }
  Status DeleteFile(const std::string& principal, const std::string& session_id,
                    const std::string& path) override {
    return inner_.DeleteFile(principal, session_id, path);
  }

 protected:
  SessionService& inner() { return inner_; }

 private:
  SessionService& inner_;
};

}  // namespace sandbox::exec
