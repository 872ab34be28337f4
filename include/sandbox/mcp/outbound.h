// Outbound: where the messages that belong to one request go before (and besides) its response:
// progress and log notifications. Each transport supplies one per request: an SSE stream
// (Streamable HTTP), the session's event stream (legacy HTTP+SSE), or stdout (stdio).
// Thread-safety: Send() may be called from any thread; implementations serialize.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "sandbox/core/byte_budget.h"

namespace sandbox::mcp {

class Outbound {
 public:
  virtual ~Outbound() = default;
  // Queues or writes one JSON-RPC message. Must not block for long: it runs on the thread that
  // relays a run's output.
  virtual void Send(const nlohmann::json& message) = 0;
  // Keeps bytes of the in-flight budget held until this Outbound is gone. Each transport
  // destroys a request's Outbound once the request's response has been written or handed to
  // its stream, so an answer's reservation (exec::ReserveAnswer) covers its building, its
  // serialization and its hand-over.
  void Hold(ByteBudget::Reservation reservation) {
    std::lock_guard lock(held_mu_);
    held_.push_back(std::move(reservation));
  }

 private:
  std::mutex held_mu_;
  std::vector<ByteBudget::Reservation> held_;
};

// Drops everything: for responses that cannot carry notifications (a plain JSON HTTP answer).
class NullOutbound final : public Outbound {
 public:
  void Send(const nlohmann::json& /*message*/) override {}
};

}  // namespace sandbox::mcp
