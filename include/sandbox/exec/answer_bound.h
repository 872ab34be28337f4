// An answer's bytes as the client receives them, and their place in the in-flight budget
// (docs/memory-budget.md, "Answers: figures, output and encoding"). Every surface that answers
// with a run's result (MCP run_python, /v1/execute, /eval) bounds its output and reserves its
// bytes here before it builds the answer, so the bound and its arithmetic have one owner.
// Thread-safety: pure functions; ReserveAnswer only through ByteBudget's own locking.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sandbox/core/byte_budget.h"
#include "sandbox/core/result.h"
#include "sandbox/exec/run_types.h"

namespace sandbox::exec {

// Output reaches the client as at most kOutputEscapeFactor times the bytes the code wrote, plus
// kOutputEscapeSlack: ordinary text escapes to at most twice its size (newlines, quotes), so it
// is never cut; control bytes (six characters each) and invalid UTF-8 (three, as U+FFFD) are,
// where their escaped size passes the bound.
inline constexpr std::size_t kOutputEscapeFactor = 2;
inline constexpr std::size_t kOutputEscapeSlack = 4096;
// Said where BoundOutputText cut.
inline constexpr std::string_view kEscapeCutMarker =
    "\n[output truncated: its JSON text would be more than twice the bytes written]\n";

// `raw` as valid UTF-8 (RepairUtf8), cut at a character boundary so that it escapes to at most
// kOutputEscapeFactor * raw.size() + kOutputEscapeSlack bytes (the marker included). True when
// it was cut.
bool BoundOutputText(std::string& raw);

// BoundOutputText on stdout and stderr; a cut sets output_truncated.
void BoundResultOutput(RunResult& result);

// The most bytes the MCP text block repeats of stdout and stderr together, escaped (the full
// output is in structuredContent; docs/memory-budget.md says why).
inline constexpr std::size_t kTextBlockOutputBytes = 64 << 10;

// An upper bound of the serialized size of any answer made of `result` (MCP's CallToolResult
// with its text block, /v1/execute's JSON or SSE event, /eval's JSON) once BoundResultOutput
// ran: every string escaped, figures and files in base64 (or as text no larger), the text
// block's copy and a fixed allowance for field names and numbers.
std::int64_t AnswerBytes(const RunResult& result);

// While an answer is built and handed to the transport, the server holds at most this many
// copies of it at once: the result as the sandbox sent it, the JSON document, its text.
inline constexpr std::int64_t kAnswerCopies = 3;

struct AnswerBudget {
  ByteBudget* budget = nullptr;          // null: answers are not counted (tests, tools without one)
  std::chrono::milliseconds wait{5000};  // memory.inflight_wait_ms
};

// Bounds the result's output (BoundResultOutput), then holds kAnswerCopies * AnswerBytes of
// the budget, waiting up to budget.wait. kBusy, with ByteBudget::RefusalMessage (naming
// memory.inflight_bytes), when they do not fit; an empty reservation without a budget.
Result<ByteBudget::Reservation> ReserveAnswer(const AnswerBudget& budget, RunResult& result);

}  // namespace sandbox::exec
