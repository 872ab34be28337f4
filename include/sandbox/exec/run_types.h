// The vocabulary of one Python run, shared by the execution engine and the protocol layers
// (MCP, HTTP). Plain value types; nothing here knows about Docker.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/exec/run_schema.h"

namespace sandbox::exec {

// How a run ended: enum class Verdict (kOk, kError, kTimeout, kMemory, kOutputLimit,
// kCancelled, kSignal, kInternal) is generated from the protocol's schema (its "verdicts",
// src/harness/sandbox_harness/protocol.json), whose names the harness gives in `done`.
std::string_view VerdictName(Verdict verdict);
std::optional<Verdict> ParseVerdict(std::string_view name);

enum class Stream { kStdout, kStderr };

// A file placed in the run's working directory before the code starts.
struct InputFile {
  std::string path;     // relative, no "..", no absolute paths
  std::string content;  // raw bytes
};

// Per-request narrowing of the pool's limits; unset fields keep the pool's default. A value
// above the pool's max_limits is an invalid-argument error, never silently clamped.
struct LimitOverrides {
  std::optional<double> timeout_s;
  std::optional<std::int64_t> memory_bytes;
  std::optional<std::int64_t> output_bytes;
};

// A request's narrowing of its pool's network policy (docs/network.md): off, or only these of the
// pool's entries (each within one of the pool's), plus entries to deny. The service checks it
// against the pool; a request can never widen what the pool allows.
struct NetworkRequest {
  bool off = false;
  std::vector<std::string> allow;
  std::vector<std::string> deny;
};

// `network` as a request spells it: "none", or {"allow": [...], "deny": [...]}. kInvalidArgument
// naming what is wrong ("network.allow[2]: ...").
Result<NetworkRequest> ParseNetworkRequest(const nlohmann::json& value);
// Its JSON Schema, for the MCP tools and /openapi.json.
nlohmann::json NetworkRequestSchema();

struct RunRequest {
  std::string code;
  std::vector<InputFile> files;
  LimitOverrides limits;
  std::string pool;                       // "" = the default pool
  std::optional<NetworkRequest> network;  // unset: the pool's policy as it is
  // Whom the run is for (the bearer token's name): fair sharing of pools and the per-principal
  // limits are kept by it. "" = the server itself (internal probes), never limited.
  std::string principal;
};

struct TracebackFrame {
  std::string file;
  int line = 0;
  std::string function;
};

struct Traceback {
  std::string type;
  std::string message;
  std::vector<TracebackFrame> frames;  // outermost first; the harness's own frames removed
};

struct Image {
  std::string mime_type = "image/png";
  int width = 0;
  int height = 0;
  std::string data;  // raw bytes
};

struct OutputFile {
  std::string path;  // relative to the working directory
  std::int64_t size = 0;
  std::string mime_type;
  std::string data;  // raw bytes
};

struct RunResult {
  Verdict verdict = Verdict::kInternal;
  int exit_code = -1;
  std::optional<int> signal;     // the signal that killed the run, if any
  std::int64_t duration_ms = 0;  // from the code's start to its end
  std::string stdout_text;       // raw bytes as written (may be invalid UTF-8)
  std::string stderr_text;
  std::optional<std::string> value;  // repr of a final expression, as in a notebook cell
  std::optional<Traceback> traceback;
  std::vector<Image> images;
  std::vector<OutputFile> files;
  bool output_truncated = false;
  bool files_truncated = false;
  // Figures were dropped: over output.max_figures, max_figure_px, max_figure_bytes or the run's
  // output.max_figures_bytes.
  bool images_truncated = false;
  std::string detail;  // a human-readable reason for non-ok verdicts
  std::string pool;    // the pool that served the run
  // The engine (docker.engines name) of the sandbox that served it; empty when none did.
  std::string engine;
  // The sandbox (container id, 12 hex digits) that served it: for the operator's audit log,
  // never sent to clients.
  std::string sandbox_id;
  // Sessions only: this run ended the session's interpreter (a limit kill, a signal, os._exit)
  // and the session was restarted empty; `detail` says so. Or, with the run itself fine, the
  // session had been restarted empty since the previous call (its interpreter died while idle):
  // then `session_notice` says why.
  bool session_reset = false;
  std::string session_notice;
  std::string session_id;  // the session that ran it; empty for one-shot runs
};

}  // namespace sandbox::exec
