// The harness protocol's messages as types (docs/harness-protocol.md), with every name taken
// from the protocol's schema (harness_wire.h, generated from the file the harness reads): the
// server's requests encoded, the harness's events decoded, the results of its replies read.
//
// The harness is untrusted (the run's code shares a process with the harness code that writes
// its results), so decoding never fails on a member: one that is missing or of another type
// reads as absent (the field's empty value, or an empty optional), and what an absent value
// means is decided where the event is used. Only a frame that is no JSON object, or an event
// this server does not act on, is an event of its own kind.
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/runner/harness_sandbox.h"
#include "sandbox/runner/sandbox.h"

namespace sandbox::runner {

// ---- Requests, server -> harness.

// `config`: every value the harness uses, since it has no defaults of its own.
nlohmann::json ConfigRequest(const SandboxSetup& setup);
// A `limits` object: every field, always (cpu_s 0: derived from the timeout; memory_bytes 0:
// the container's limit only).
nlohmann::json HarnessLimits(const RunLimits& limits);
nlohmann::json RunRequest(std::string_view id, std::string_view code,
                          const std::vector<exec::InputFile>& files, const RunLimits& limits,
                          bool interactive);
nlohmann::json CancelRequest(std::string_view id);
// The answer to the run's ask `seq`: a line, or EOF (nullopt).
nlohmann::json InputReplyRequest(std::string_view id, std::int64_t seq,
                                 const std::optional<std::string>& line);
nlohmann::json PingRequest();
// The session and file ops: each has an `id`, echoed by its reply.
nlohmann::json SessionRequest(std::string_view id, const RunLimits& limits,
                              const SessionTerms& terms);
nlohmann::json ResumeRequest(std::string_view id);
nlohmann::json PutFilesRequest(std::string_view id, const std::vector<exec::InputFile>& files);
nlohmann::json ListFilesRequest(std::string_view id);
nlohmann::json GetFileRequest(std::string_view id, std::string_view path, std::int64_t max_bytes);
nlohmann::json DeleteFileRequest(std::string_view id, std::string_view path);
// A request's op ("" when it has none).
std::string RequestName(const nlohmann::json& request);
// The frame that carries a request (invalid UTF-8 replaced: the harness reads UTF-8).
std::string EncodeRequest(const nlohmann::json& request);

// The largest frame the server reads from this setup's harness: a figure, a file piece or a
// session's file, base64 in JSON, plus room for the fields around them. A longer frame is a
// protocol error before any of it is buffered.
std::size_t MaxFrameBytes(const SandboxSetup& setup);

// ---- Events, harness -> server.

struct ReadyEvent {
  nlohmann::json message;  // kept whole: the sandbox's ready_info()
};
struct StartedEvent {
  std::string id;
};
struct InputRequestEvent {
  std::string id;
  std::optional<std::int64_t> seq;
  std::string prompt;
};
struct ImageEvent {
  std::string id;
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::string data_b64;
};
// One piece of a returned file (offset 0 first, the last one marked).
struct FileEvent {
  std::string id;
  std::string path;
  std::optional<std::int64_t> offset;
  bool last = false;
  std::string mime_type;
  std::string data_b64;
};
struct DoneEvent {
  std::string id;
  std::string verdict;
  std::optional<std::int64_t> exit_code;
  std::optional<std::int64_t> signal;
  std::optional<std::int64_t> duration_ms;
  std::optional<std::string> value;
  std::optional<nlohmann::json> traceback;  // an object
  bool output_truncated = false;
  bool files_truncated = false;
  bool images_truncated = false;
  bool session_reset = false;
  std::string detail;
};
struct PongEvent {
  std::optional<std::int64_t> memory_bytes;
};
struct ReplyEvent {
  std::string id;
  bool ok = false;
  nlohmann::json result = nlohmann::json::object();  // an empty object when absent
  std::string error;
};
struct SessionResetEvent {
  std::string reason;
};
struct FatalEvent {
  std::string message;
};
// A JSON object naming an event this server does not act on.
struct OtherEvent {
  std::string ev;
};
// A JSON frame that is no JSON object: `parsed` when it is JSON nonetheless.
struct InvalidMessage {
  bool parsed = false;
};

// A struct rather than an alias, so that harness_sandbox.h can declare it.
struct HarnessEvent : std::variant<InvalidMessage, OtherEvent, ReadyEvent, StartedEvent,
                                   InputRequestEvent, ImageEvent, FileEvent, DoneEvent, PongEvent,
                                   ReplyEvent, SessionResetEvent, FatalEvent> {
  using variant::variant;
};

// A JSON frame's payload as the event it is. The JSON is nesting-bounded like every JSON from
// outside (the run's code can write frames of its own making).
HarnessEvent DecodeEvent(std::string_view payload);
// The `ev` the event had ("" for an invalid message).
std::string_view EventName(const HarnessEvent& event);

// ---- Results of replies.

ResumeInfo DecodeResume(const nlohmann::json& result);
std::vector<exec::SessionFile> DecodePutFiles(const nlohmann::json& result);
// An entry whose path is not a valid result path is dropped and marks the list truncated
// (the zygote checked the session's answer; the session's code can forge it).
exec::SessionFileList DecodeListFiles(const nlohmann::json& result);
// kProtocol when the data is not base64; the path is the requested one when none is given.
Result<exec::OutputFile> DecodeGetFile(const nlohmann::json& result,
                                       std::string_view requested_path);
// A refusal: kNotFound ("no such file"), kLimit (a size bound), kUnavailable (the session was
// reset or timed out), kInvalidArgument otherwise.
Error ReplyError(const ReplyEvent& reply);

}  // namespace sandbox::runner
