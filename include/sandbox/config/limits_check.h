// The one rule that a set of limits stays within its maximum, shared by configuration
// validation (a pool's limits within its max_limits) and session adoption (a record left in a
// session container within its pool's max_limits).
#pragma once

#include <optional>
#include <string_view>

#include "sandbox/config/config.h"

namespace sandbox::config {

// The name of the first field of `limits` above the same field of `max` ("timeout_s", ...),
// or nullopt when every field is within. cpu_s has no maximum and is not compared.
std::optional<std::string_view> FirstLimitOver(const Limits& limits, const Limits& max);

}  // namespace sandbox::config
