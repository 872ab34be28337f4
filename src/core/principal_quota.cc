#include "sandbox/core/principal_quota.h"

#include <algorithm>
#include <cmath>

namespace sandbox {

PrincipalQuota::Ticket::~Ticket() { quota_->Release(principal_); }

PrincipalQuota::PrincipalQuota(FairShareOptions options, std::function<Clock::time_point()> now)
    : options_(options), now_(std::move(now)) {}

std::optional<Error> PrincipalQuota::RefusalLocked(Account& account, Clock::time_point now) const {
  if (options_.max_concurrent_runs > 0 && account.in_progress >= options_.max_concurrent_runs) {
    return Error(ErrorCode::kRateLimited,
                 "this token already has " + std::to_string(account.in_progress) +
                     " runs in progress, the most one token may run at once "
                     "(per_principal.max_concurrent_runs); retry when one of them ends")
        .WithRetryAfter(1);
  }
  if (options_.runs_per_minute <= 0) return std::nullopt;
  const double capacity = options_.runs_per_minute;
  const double per_second = capacity / 60.0;
  const double elapsed = std::chrono::duration<double>(now - account.refilled).count();
  account.tokens = std::min(capacity, account.tokens + std::max(elapsed, 0.0) * per_second);
  account.refilled = now;
  if (account.tokens >= 1.0) return std::nullopt;
  const int wait_s = std::max(1, static_cast<int>(std::ceil((1.0 - account.tokens) / per_second)));
  return Error(ErrorCode::kRateLimited,
               "this token started " + std::to_string(options_.runs_per_minute) +
                   " runs within the last minute, the most one token may start per minute "
                   "(per_principal.runs_per_minute); retry in " +
                   std::to_string(wait_s) + " s")
      .WithRetryAfter(wait_s);
}

Result<std::unique_ptr<PrincipalQuota::Ticket>> PrincipalQuota::Admit(
    const std::string& principal) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = now_();
  auto [it, created] = accounts_.try_emplace(principal);
  Account& account = it->second;
  if (created) {
    account.tokens = options_.runs_per_minute;
    account.refilled = now;
  }
  if (auto refused = RefusalLocked(account, now)) return *refused;
  if (options_.runs_per_minute > 0) account.tokens -= 1.0;
  ++account.in_progress;
  return std::unique_ptr<Ticket>(new Ticket(this, principal));
}

void PrincipalQuota::Release(const std::string& principal) {
  std::lock_guard lock(mu_);
  auto it = accounts_.find(principal);
  if (it == accounts_.end()) return;
  --it->second.in_progress;
  // Without a rate limit an idle account holds nothing worth keeping.
  if (it->second.in_progress == 0 && options_.runs_per_minute <= 0) accounts_.erase(it);
}

int PrincipalQuota::in_progress(const std::string& principal) const {
  std::lock_guard lock(mu_);
  auto it = accounts_.find(principal);
  return it == accounts_.end() ? 0 : it->second.in_progress;
}

}  // namespace sandbox
