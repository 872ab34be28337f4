// RunMonitor: what ends one run from outside the harness. The caller's cancel becomes a
// `cancel` request at once, re-sent once if the harness has not ended the run soon after (it
// may have crossed the `run`), and then the run is given up; past the run's deadline (its
// timeout plus a grace: the harness enforces the timeout, this is the backstop) it is given up
// too. Giving up is the caller's: it kills the container. The monitor also carries the run's
// input replies to the harness.
//
// Thread-safety: the run's thread calls Poll() and NextWake(); the cancel token and the input
// replies may fire from any thread, also after the run (and the sandbox) ended: they reach the
// harness only until Close(), under a mutex shared with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/core/result.h"
#include "sandbox/engine/deadline.h"
#include "sandbox/exec/cancel_token.h"
#include "sandbox/exec/execution_service.h"

namespace sandbox::runner {

class RunMonitor {
 public:
  // Writes a request to the harness by the deadline.
  using Send = std::function<Status(const nlohmann::json&, engine::Deadline)>;
  // How often the run's read loop looks at cancellation and its deadline while output is quiet.
  static constexpr auto kPollSlice = std::chrono::milliseconds(200);
  // A cancel the harness has not answered after this is re-sent once, then the run given up.
  static constexpr auto kCancelResend = std::chrono::milliseconds(400);
  static constexpr auto kCancelGiveUp = std::chrono::milliseconds(900);

  enum class State {
    kRunning,
    kCancelUnanswered,  // cancelled, and the harness did not end the run
    kDeadlinePassed,    // the run outlived its deadline
  };

  RunMonitor(std::string run_id, engine::Deadline deadline, Send send);
  ~RunMonitor();
  RunMonitor(const RunMonitor&) = delete;
  RunMonitor& operator=(const RunMonitor&) = delete;

  // From now until Close(), a cancel of `cancel` is sent to the harness.
  void Watch(const exec::CancelToken& cancel);
  // What the run's input ask `seq` is answered through: a reply after Close() goes nowhere.
  exec::InputReply ReplyTo(std::int64_t seq) const;
  // Whether the run may go on at `now`; re-sends an unanswered cancel when it is time.
  State Poll(engine::Clock::time_point now);
  // How long the run's read may wait for the harness before the next Poll().
  engine::Deadline NextWake(engine::Clock::time_point now) const;
  // The run is over: the token and the replies no longer reach the harness. Also on destruction.
  void Close();

 private:
  struct Link;  // shared with the token's callback and the replies, which may outlive the run

  std::shared_ptr<Link> link_;
  engine::Deadline deadline_;
  bool resent_cancel_ = false;
};

}  // namespace sandbox::runner
