// Outbound: where the messages that belong to one request go before (and besides) its response:
// progress and log notifications. Each transport supplies one per request: an SSE stream
// (Streamable HTTP), the session's event stream (legacy HTTP+SSE), or stdout (stdio).
// Thread-safety: Send() may be called from any thread; implementations serialize.
#pragma once

#include <nlohmann/json.hpp>

namespace sandbox::mcp {

class Outbound {
 public:
  virtual ~Outbound() = default;
  // Queues or writes one JSON-RPC message. Must not block for long: it runs on the thread that
  // relays a run's output.
  virtual void Send(const nlohmann::json& message) = 0;
};

// Drops everything: for responses that cannot carry notifications (a plain JSON HTTP answer).
class NullOutbound final : public Outbound {
 public:
  void Send(const nlohmann::json& /*message*/) override {}
};

}  // namespace sandbox::mcp
