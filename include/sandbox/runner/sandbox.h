// Sandbox: what the engine (service/) asks of one sandbox, in exec types. HarnessSandbox
// implements it over a container and the harness's wire protocol (docs/harness-protocol.md);
// tests of the service layer use a fake (tests/support/fake_sandbox.h). Nothing here names the
// harness's messages, so the service layer never writes or reads them.
//
// Thread-safety: one holder at a time calls a sandbox (the pool or a lease holder guarantees
// it); a run's CancelToken may fire from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/pool/pooled_sandbox.h"

namespace sandbox::runner {

// Input files a run (or a session upload) may bring. The server checks them before a run; the
// harness gets the same numbers (config files_in) as its backstop, so the two cannot disagree.
struct InputLimits {
  int max_files = 64;
  std::int64_t max_total_bytes = 32LL << 20;  // decoded bytes, all files together
};

// The limits one run gets: a pool's limits (config::Limits) resolved against the request. The
// container-wide fields (cpus, pids) are fixed when the container starts and unused per run.
using RunLimits = config::Limits;

// What a ping of an idle sandbox learns.
struct PingInfo {
  std::optional<std::int64_t> memory_bytes;  // the container's memory use, when readable
};

// What a session begins with besides its limits.
struct SessionTerms {
  // The session's record (session_record.h), kept by the sandbox for a later server; null:
  // none (no restart grace).
  nlohmann::json record;
  // How long the sandbox waits, idle, for a server to speak to it before it exits; unset:
  // as it was started (SandboxSetup::watchdog).
  std::optional<std::chrono::seconds> watchdog;
};

// What a session sandbox left by an earlier server says about itself.
struct ResumeInfo {
  nlohmann::json record;  // null: it never served a session (a warm container)
  double idle_s = 0;      // how long no server had spoken to it
  int protocol = 0;       // the harness protocol version it speaks
};

class Sandbox : public pool::PooledSandbox {
 public:
  // Runs `code` to its end. Verdicts of the code (error, timeout, memory, ...) are results;
  // kInternal results mean the sandbox broke (it is then no longer Reusable()).
  virtual exec::RunResult Run(const std::string& code, const std::vector<exec::InputFile>& files,
                              const RunLimits& limits, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) = 0;
  // A lost sandbox becomes kUnavailable (and no longer Reusable()).
  virtual Result<PingInfo> Ping() = 0;
  // From now on its connections are decided by `policy` (a narrowing of its pool's, checked by
  // the caller); null: the pool's own again. A sandbox without a network has nothing to narrow
  // (a policy of mode none is then success; any other kUnsupported). A sandbox whose pool's
  // policy could not be restored is no longer Reusable().
  virtual Status SetNetwork(const config::NetworkPolicy* policy) {
    if (policy == nullptr || policy->mode == config::NetworkPolicy::Mode::kNone) return OkStatus();
    return Error(ErrorCode::kUnsupported, "this sandbox has no network to narrow");
  }
  // The container's full id (logs, the engine's inspection of a lost sandbox).
  virtual const std::string& container_id() const = 0;
  // The name of the engine it runs on (engine::ContainerEngine::name()): results, audit lines
  // and metrics say where a run ran, and loss handling asks that engine.
  virtual const std::string& engine() const = 0;
  // The session id this sandbox was started for (its container's label holds the id's key);
  // empty for sandboxes started without one.
  virtual const std::string& session_id() const = 0;

  // ---- Session sandboxes only. Every call fails kUnavailable once the sandbox is lost (and
  // it is then no longer Reusable()); a refusal of the sandbox keeps it usable and is
  // kNotFound (no such file), kLimit (a size bound) or kInvalidArgument.

  // Sets the limits every interpreter of the session starts with. Call once, right after the
  // sandbox is had, before any other session call.
  virtual Status BeginSession(const RunLimits& limits, const SessionTerms& terms) = 0;
  // Asks a sandbox left by an earlier server what it holds (before BeginSession).
  virtual Result<ResumeInfo> Resume() = 0;
  // Writes files into the working directory; returns what was written.
  virtual Result<std::vector<exec::SessionFile>> PutFiles(
      const std::vector<exec::InputFile>& files) = 0;
  // Entries whose path is not a valid result path are dropped and mark the list truncated.
  virtual Result<exec::SessionFileList> ListFiles() = 0;
  // A file of at most `max_bytes` (more is kLimit).
  virtual Result<exec::OutputFile> GetFile(const std::string& path, std::int64_t max_bytes) = 0;
  virtual Status DeleteFile(const std::string& path) = 0;
  // The notice of a restart that happened while the session was idle (its interpreter died
  // between calls), once; empty when none.
  virtual std::string TakeSessionNotice() = 0;
  // Lets the container run on without this server (for a later one to adopt): destroying the
  // sandbox no longer removes it. The sandbox is unusable after.
  virtual void Leave() = 0;
};

}  // namespace sandbox::runner
