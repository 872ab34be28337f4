// PrincipalQuota: fair sharing between principals (bearer-token names): a bound on the runs one
// principal has in progress at once and on the runs it starts per minute (a token bucket). The
// execution and session services are wrapped with it (service/fair_share.h), so one token
// cannot take every sandbox or the engine's whole throughput while others wait. A refusal is
// ErrorCode::kRateLimited with retry_after_s() set and a message naming the limit; the protocol
// layers turn it into 429 + Retry-After (HTTP) or a tool error a model can act on (MCP).
// Thread-safety: every method from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "sandbox/core/result.h"

namespace sandbox {

struct FairShareOptions {
  // Runs (one-shot runs and session cells) one principal has in progress at once; 0: only the
  // pools bound them (each pool still hands a freed sandbox to the least-served principal).
  int max_concurrent_runs = 0;
  // Runs one principal may start per minute, as a token bucket holding a minute's worth (so a
  // burst of that many is allowed, then the rate); 0: no rate limit.
  int runs_per_minute = 0;
};

class PrincipalQuota {
 public:
  using Clock = std::chrono::steady_clock;

  // Holds one run in progress for its principal; released when destroyed.
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    friend class PrincipalQuota;
    Ticket(PrincipalQuota* quota, std::string principal)
        : quota_(quota), principal_(std::move(principal)) {}
    PrincipalQuota* quota_;
    std::string principal_;
  };

  explicit PrincipalQuota(FairShareOptions options,
                          std::function<Clock::time_point()> now = Clock::now);

  // A ticket for one more run of `principal`, or kRateLimited. The quota must outlive tickets.
  Result<std::unique_ptr<Ticket>> Admit(const std::string& principal);

  int in_progress(const std::string& principal) const;
  const FairShareOptions& options() const { return options_; }

 private:
  struct Account {
    int in_progress = 0;
    double tokens = 0;  // runs it may start now (runs_per_minute > 0)
    Clock::time_point refilled;
  };
  void Release(const std::string& principal);
  // The refusal for `account` now, if any; refills its bucket to `now`.
  std::optional<Error> RefusalLocked(Account& account, Clock::time_point now) const;

  const FairShareOptions options_;
  const std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::map<std::string, Account> accounts_;
};

}  // namespace sandbox
