#include "run_monitor.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "harness_protocol.h"

namespace sandbox::runner {

using engine::Clock;
using engine::DeadlineAfter;

struct RunMonitor::Link {
  std::mutex mu;
  bool open = true;  // false once the run is over
  std::string run_id;
  Send send;
  bool fired = false;  // the token fired
  Clock::time_point fired_at;
};

RunMonitor::RunMonitor(std::string run_id, engine::Deadline deadline, Send send)
    : link_(std::make_shared<Link>()), deadline_(deadline) {
  link_->run_id = std::move(run_id);
  link_->send = std::move(send);
}

RunMonitor::~RunMonitor() { Close(); }

void RunMonitor::Watch(const exec::CancelToken& cancel) {
  cancel.OnCancel([link = link_] {
    std::lock_guard lock(link->mu);
    if (!link->open || link->fired) return;
    link->fired_at = Clock::now();
    link->fired = true;
    (void)link->send(CancelRequest(link->run_id), DeadlineAfter(std::chrono::seconds(2)));
  });
}

exec::InputReply RunMonitor::ReplyTo(std::int64_t seq) const {
  return [link = link_, seq](const std::optional<std::string>& line) {
    std::lock_guard lock(link->mu);
    if (!link->open) return;  // the run is over
    (void)link->send(InputReplyRequest(link->run_id, seq, line),
                     DeadlineAfter(std::chrono::seconds(2)));
  };
}

RunMonitor::State RunMonitor::Poll(Clock::time_point now) {
  bool fired = false;
  Clock::time_point fired_at;
  {
    std::lock_guard lock(link_->mu);
    fired = link_->fired;
    fired_at = link_->fired_at;
  }
  if (fired) {
    if (!resent_cancel_ && now - fired_at > kCancelResend) {
      // The first cancel may have crossed the run op before the harness started the run.
      resent_cancel_ = true;
      (void)link_->send(CancelRequest(link_->run_id), DeadlineAfter(std::chrono::seconds(1)));
    } else if (now - fired_at > kCancelGiveUp) {
      return State::kCancelUnanswered;
    }
  }
  return now >= deadline_ ? State::kDeadlinePassed : State::kRunning;
}

engine::Deadline RunMonitor::NextWake(Clock::time_point now) const {
  return std::min(deadline_, now + kPollSlice);
}

void RunMonitor::Close() {
  std::lock_guard lock(link_->mu);
  link_->open = false;
}

}  // namespace sandbox::runner
