// The run result as JSON: the one writer of it for every surface that returns one, in one of two
// shapes (so the surfaces never drift):
//
//   kSummary: run_python's structuredContent (MCP). Figures as {mime_type, width, height,
//     bytes} and files as {path, size, mime_type}: their bytes travel as content blocks. A field
//     that is absent, empty or false is left out (value, traceback, detail, engine, the
//     truncation flags); session_id and session_reset only in a session's run, its
//     session_notice when there is one.
//   kComplete: the body of POST /v1/execute and its SSE `result` event. Every field, null when
//     absent; figures and files with their bytes, base64 (RunImageJson, RunFileJson).
//
// Which fields each shape has, their types and descriptions: the "run_result" of the protocol's
// schema (src/harness/sandbox_harness/protocol.json, generated into run_schema.h), from which
// RunResultSchema builds each shape's JSON Schema (MCP's outputSchema, the OpenAPI document).
// /eval answers in Snekbox's shape instead (api/snekbox.cc): a compatibility surface.
// Strings are made valid UTF-8.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "sandbox/exec/run_types.h"

namespace sandbox::exec {

enum class RunResultShape { kSummary, kComplete };

// Moves the output (and in the complete shape each figure's and file's bytes, as their base64
// enters the answer) out of `result`, so an answer is built once and its bytes never held twice
// (docs/memory-budget.md). The summary leaves the figures and files in `result` for the
// caller's content blocks. Output is taken as it is when valid UTF-8 (BoundResultOutput made it
// so), else repaired.
nlohmann::json RunResultJson(RunResult& result, RunResultShape shape);

// One figure and one file of the complete shape (also the SSE `image` and `file` events).
nlohmann::json RunImageJson(const Image& image);
nlohmann::json RunFileJson(const OutputFile& file);

// The JSON Schema of a shape, and of the complete shape's figure and file.
nlohmann::json RunResultSchema(RunResultShape shape);
nlohmann::json RunImageSchema();
nlohmann::json RunFileSchema();

}  // namespace sandbox::exec
