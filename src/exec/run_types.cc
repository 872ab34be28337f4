#include "sandbox/exec/run_types.h"

#include <array>
#include <utility>

namespace sandbox::exec {
namespace {

constexpr std::array<std::pair<Verdict, std::string_view>, 8> kVerdictNames = {{
    {Verdict::kOk, "ok"},
    {Verdict::kError, "error"},
    {Verdict::kTimeout, "timeout"},
    {Verdict::kMemory, "memory"},
    {Verdict::kOutputLimit, "output_limit"},
    {Verdict::kCancelled, "cancelled"},
    {Verdict::kSignal, "signal"},
    {Verdict::kInternal, "internal"},
}};

}  // namespace

std::string_view VerdictName(Verdict verdict) {
  for (const auto& [v, name] : kVerdictNames) {
    if (v == verdict) return name;
  }
  return "internal";
}

std::optional<Verdict> ParseVerdict(std::string_view name) {
  for (const auto& [v, n] : kVerdictNames) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace sandbox::exec
