// Deadline: the absolute point in time by which a call to a container engine must finish. Every
// engine call takes one, because a hung or stalled engine (it accepts connections and answers
// nothing) must never hang the server.
// Thread-safety: plain value types and pure functions; safe from any thread.
#pragma once

#include <chrono>

namespace sandbox::engine {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// A deadline `timeout` from now.
inline Deadline DeadlineAfter(std::chrono::milliseconds timeout) { return Clock::now() + timeout; }

// Milliseconds left until `deadline`, clamped at 0.
inline std::chrono::milliseconds Remaining(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

}  // namespace sandbox::engine
