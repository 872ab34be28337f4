// RequestStateSealer: integrity for the requestState of MCP 2026-07-28's multi round-trip
// requests (an InputRequiredResult's state that the client echoes with its answers). The state
// comes back from the client, so it is sealed with an HMAC over the state, the principal, the
// tool and an expiry: a state that was altered, belongs to another token or tool, or is older
// than `ttl` does not open. The key is random per process, so a restart invalidates every
// outstanding state (the client then starts the call over), unless server.request_state_key_file
// names a key file: replicas behind a balancer share it, so a round trip opens on any of them.
// Thread-safety: const methods; safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"

namespace sandbox::mcp {

// The shortest key a key file may hold: 256 bits, as much as the HMAC's output.
inline constexpr std::size_t kMinRequestStateKeyBytes = 32;
// A file larger than this is no key file (a wrong path, e.g. to a log).
inline constexpr std::size_t kMaxRequestStateKeyBytes = 4096;

// The key in the file at `path`: all its bytes, a trailing newline included. kInvalidArgument
// naming the path when it cannot be read or holds fewer than kMinRequestStateKeyBytes or more
// than kMaxRequestStateKeyBytes bytes.
Result<std::string> ReadRequestStateKey(const std::string& path);

class RequestStateSealer {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  // `key`: at least 32 random bytes in practice; `now`: the clock (system clock by default).
  explicit RequestStateSealer(std::string key, std::chrono::seconds ttl = std::chrono::seconds(600),
                              Clock now = nullptr);

  // The opaque value to send as requestState.
  std::string Seal(std::string_view principal, std::string_view tool, std::string_view state) const;
  // The state sealed for this principal and tool; kInvalidArgument when the value was altered,
  // sealed for another principal or tool, or has expired (the message does not say which).
  Result<std::string> Open(std::string_view principal, std::string_view tool,
                           std::string_view sealed) const;

 private:
  std::chrono::system_clock::time_point Now() const;

  const std::string key_;
  const std::chrono::seconds ttl_;
  const Clock now_;
};

}  // namespace sandbox::mcp
