#include "sandbox/exec/answer_bound.h"

#include <algorithm>
#include <utility>

#include "sandbox/core/json_size.h"
#include "sandbox/core/utf8.h"

namespace sandbox::exec {
namespace {

// Field names, numbers, the summary line and JSON-RPC framing of one answer.
constexpr std::int64_t kFixedBytes = 16 << 10;
// Per figure or file besides its data: names, sizes, its URI and its line in the text block.
constexpr std::int64_t kPerItemBytes = 512;

std::int64_t Escaped(std::string_view raw) {
  // Raw bytes may still be invalid UTF-8 (file names, tracebacks): U+FFFD is three bytes.
  return static_cast<std::int64_t>(IsValidUtf8(raw) ? JsonEscapedBytes(raw)
                                                    : JsonEscapedBytes(RepairUtf8(raw)));
}

}  // namespace

bool BoundOutputText(std::string& raw) {
  const std::size_t bound = kOutputEscapeFactor * raw.size() + kOutputEscapeSlack;
  // Valid text (the usual case) is measured and cut in place, never copied.
  if (!IsValidUtf8(raw)) raw = RepairUtf8(raw);
  if (JsonEscapedBytes(raw) <= bound) return false;
  raw.resize(JsonPrefixWithin(raw, bound - JsonEscapedBytes(kEscapeCutMarker)));
  raw += kEscapeCutMarker;
  raw.shrink_to_fit();
  return true;
}

void BoundResultOutput(RunResult& result) {
  const bool out_cut = BoundOutputText(result.stdout_text);
  const bool err_cut = BoundOutputText(result.stderr_text);
  if (out_cut || err_cut) result.output_truncated = true;
}

std::int64_t AnswerBytes(const RunResult& r) {
  std::int64_t n = kFixedBytes + static_cast<std::int64_t>(kTextBlockOutputBytes);
  n += Escaped(r.stdout_text) + Escaped(r.stderr_text);
  // Repeated in the text block when present.
  std::int64_t twice = Escaped(r.detail) + Escaped(r.session_notice) + Escaped(r.session_id);
  if (r.value) twice += Escaped(*r.value);
  if (r.traceback) {
    twice += Escaped(r.traceback->type) + Escaped(r.traceback->message);
    for (const auto& f : r.traceback->frames) {
      twice += Escaped(f.file) + Escaped(f.function) + kPerItemBytes / 8;
    }
  }
  n += 2 * twice;
  for (const auto& image : r.images) {
    n += static_cast<std::int64_t>(Base64Bytes(image.data.size())) + kPerItemBytes;
  }
  for (const auto& file : r.files) {
    // A file's path appears in structuredContent, the text block and its URI (percent-encoded,
    // up to three bytes each).
    // Its bytes as base64, or as MCP resource text escaped to at most twice their size + 64
    // (mcp::IsTextContent).
    const auto size = static_cast<std::int64_t>(file.data.size());
    n += std::max(static_cast<std::int64_t>(Base64Bytes(file.data.size())), 2 * size + 64) +
         6 * Escaped(file.path) + 2 * Escaped(file.mime_type) + kPerItemBytes;
  }
  return n;
}

Result<ByteBudget::Reservation> ReserveAnswer(const AnswerBudget& budget, RunResult& result) {
  BoundResultOutput(result);
  if (budget.budget == nullptr) return ByteBudget::Reservation();
  const std::int64_t bytes = kAnswerCopies * AnswerBytes(result);
  auto held = budget.budget->Reserve(bytes, budget.wait);
  if (!held) {
    return Error(ErrorCode::kBusy, budget.budget->RefusalMessage(
                                       bytes, "the run's answer (" + std::to_string(kAnswerCopies) +
                                                  " copies while it is built and sent)"));
  }
  return std::move(*held);
}

}  // namespace sandbox::exec
