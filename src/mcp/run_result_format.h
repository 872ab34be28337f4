// How a run's result is shown to an MCP client: the CallToolResult of run_python.
// structuredContent follows RunPythonOutputSchema(); content has one text block written for a
// model to read (verdict, stdout, stderr, value, traceback, truncation markers), one image block
// per figure, and each produced file as an embedded resource (ResourceContents: text for UTF-8
// text, base64 blob otherwise) at sandbox://runs/<run_id>/files/<path>, or for a session run
// (result.session_id set) at sandbox://sessions/<session_id>/files/<path>, where it stays
// readable. A session run's structuredContent also has session_id, session_reset and
// session_notice?, and its text starts with a notice when the session was restarted empty.
// isError is true exactly when the verdict is not ok.
// stdout and stderr travel once in full, in structuredContent (its schema requires them); the
// text block repeats them only up to exec::kTextBlockOutputBytes escaped (head and tail of a
// longer output, with a line saying where the rest is), so an answer never carries its output
// twice (docs/memory-budget.md). The result is consumed: its bytes move into the answer.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sandbox/exec/run_types.h"

namespace sandbox::mcp {

nlohmann::json FormatRunResult(exec::RunResult result, std::string_view run_id);

// `text` (valid UTF-8) as the text block shows it: whole when it escapes to at most
// `max_escaped` bytes, else its head and tail within that bound around a line that says how
// many bytes are left out and that `field` of structuredContent has them all.
std::string TextBlockExcerpt(std::string_view text, std::size_t max_escaped,
                             std::string_view field);

// The JSON Schema of structuredContent.
nlohmann::json RunPythonOutputSchema();

// "sandbox://runs/<run_id>/files/<path>" with the path percent-encoded per segment.
std::string FileUri(std::string_view run_id, std::string_view path);

}  // namespace sandbox::mcp
