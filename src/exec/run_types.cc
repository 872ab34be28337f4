#include "sandbox/exec/run_types.h"

#include <cstddef>

namespace sandbox::exec {

std::string_view VerdictName(Verdict verdict) {
  const auto index = static_cast<std::size_t>(verdict);
  return index < kVerdictNames.size() ? kVerdictNames[index] : "internal";
}

std::optional<Verdict> ParseVerdict(std::string_view name) {
  for (std::size_t i = 0; i < kVerdictNames.size(); ++i) {
    if (kVerdictNames[i] == name) return static_cast<Verdict>(i);
  }
  return std::nullopt;
}

}  // namespace sandbox::exec
