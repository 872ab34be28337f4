// Deadline (engine/deadline.h): the absolute point in time by which a Docker call must finish, and
// CallOptions, the per-call override of the client's default timeout. Every call in this module
// takes one, because a hung engine must never hang the server.
// Thread-safety: plain value types and pure functions; safe from any thread.
#pragma once

#include <chrono>
#include <optional>

#include "sandbox/engine/deadline.h"

namespace sandbox::docker {

using engine::Clock;
using engine::Deadline;
using engine::DeadlineAfter;
using engine::Remaining;

// Per-call options. With neither field set the client's ClientOptions::call_timeout applies.
struct CallOptions {
  std::optional<Deadline> deadline;                  // wins when set
  std::optional<std::chrono::milliseconds> timeout;  // relative to the start of the call

  static CallOptions Until(Deadline d) { return CallOptions{d, std::nullopt}; }
  static CallOptions Within(std::chrono::milliseconds t) { return CallOptions{std::nullopt, t}; }

  // The effective deadline given the client's default timeout.
  Deadline Resolve(std::chrono::milliseconds default_timeout) const {
    if (deadline) return *deadline;
    return DeadlineAfter(timeout.value_or(default_timeout));
  }
};

}  // namespace sandbox::docker
