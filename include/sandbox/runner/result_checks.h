// The server's own checks of what a run reports through the harness (defence in depth: the
// zygote checks the run process's records first, but the run's code shares a process with the
// harness code that writes them), and of the file paths a request brings. The bounds are owned
// here and all of them are sent to the harness in its config (harness_protocol.h ConfigRequest),
// which has no defaults of its own (docs/harness-protocol.md, "Trust" and "Limits").
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sandbox/exec/run_types.h"

namespace sandbox::runner {

struct ResultLimits {
  int traceback_max_frames = 100;  // the first and last halves kept, one marker frame between
  std::size_t traceback_max_message_bytes = 8192;
  std::size_t traceback_max_name_bytes = 512;     // type, file and function of a frame
  std::size_t traceback_max_total_bytes = 65536;  // all of it (frames dropped from the middle)
  std::size_t path_max_bytes = 1024;              // a file path (request or result), UTF-8
  std::size_t name_max_bytes = 255;               // one component of it
  int value_max_chars = 10000;                    // repr of the final expression (characters)
  int list_max_entries = 1000;                    // a session's list_files answer
  int walk_max_entries = 10000;  // directory entries looked at when collecting the work dir
  int walk_max_depth = 32;       // and its deepest level
  // Interactive stdin (pools[].interactive_input): asks per run (past them the harness answers
  // EOF itself), the prompt sent with an ask (characters), one answered line (bytes; at most
  // 61440, so an answer always fits the channel's pipe and writing it never blocks).
  int input_max_asks = 1000;
  int input_max_prompt_chars = 4096;
  int input_max_line_bytes = 60 << 10;
};

inline constexpr ResultLimits kResultLimits{};

// Why `path` is not a valid result path, "" when it is one: relative, normalized (no empty,
// "." or ".." component), valid UTF-8 without control characters, within the byte bounds.
std::string ResultPathError(std::string_view path, const ResultLimits& limits = kResultLimits);

// Why `path`, a file path a request brings (input files, a session file op), is not usable,
// "" when it is: the harness's own rules (non-empty, no NUL, relative, no "..", within the byte
// bounds, naming a file once "" and "." components are dropped), so no request that passes here
// is refused inside the sandbox. `normalized`, when given, receives the path the harness uses.
std::string InputPathError(std::string_view path, std::string* normalized = nullptr,
                           const ResultLimits& limits = kResultLimits);

// Why `mime_type`, a media type a sandbox claims for a file, is not one the server passes on,
// "" when it is: exactly `type/subtype`, each 1-127 of RFC 6838's restricted-name characters
// (a letter or digit first, then letters, digits and !#$&-^_.+), no parameters, no space, no
// control byte. Such a claim is safe in any listing, JSON answer, log line and HTTP header.
std::string MimeTypeError(std::string_view mime_type);

// `claimed` when MimeTypeError passes it, "application/octet-stream" otherwise (also for "").
std::string CheckedMimeType(std::string_view claimed);

// `text` cut to at most `max_bytes` at a UTF-8 boundary, ending " [... N bytes omitted]".
std::string CutText(std::string_view text, std::size_t max_bytes);

// The harness's `done.traceback` bounded by `limits` (frames beyond the bound become one frame
// "[... N frames omitted ...]" with an empty file and line 0, as the harness marks them).
exec::Traceback BoundedTraceback(const nlohmann::json& j,
                                 const ResultLimits& limits = kResultLimits);

}  // namespace sandbox::runner
