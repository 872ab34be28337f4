#include "sandbox/service/fair_share.h"

namespace sandbox::service {

Result<exec::RunResult> FairShareRuns::Run(const exec::RunRequest& request,
                                           exec::RunObserver& observer,
                                           const exec::CancelToken& cancel) {
  std::unique_ptr<PrincipalQuota::Ticket> ticket;
  if (!request.principal.empty()) {
    auto admitted = quota_.Admit(request.principal);
    if (!admitted.ok()) return admitted.error();
    ticket = std::move(*admitted);
  }
  return inner_.Run(request, observer, cancel);
}

Result<exec::RunResult> FairShareSessions::Run(const std::string& principal,
                                               const std::string& session_id,
                                               const exec::RunRequest& request,
                                               exec::RunObserver& observer,
                                               const exec::CancelToken& cancel) {
  std::unique_ptr<PrincipalQuota::Ticket> ticket;
  if (!principal.empty()) {
    auto admitted = quota_.Admit(principal);
    if (!admitted.ok()) return admitted.error();
    ticket = std::move(*admitted);
  }
  return inner_.Run(principal, session_id, request, observer, cancel);
}

}  // namespace sandbox::service
