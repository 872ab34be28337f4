#include "sandbox/service/fair_share.h"

namespace sandbox::service {
namespace {

// A ticket for a run of `principal`; none (and no limit) for the server's own runs ("").
Result<std::unique_ptr<PrincipalQuota::Ticket>> AdmitRun(PrincipalQuota& quota,
                                                         const std::string& principal) {
  if (principal.empty()) return std::unique_ptr<PrincipalQuota::Ticket>();
  return quota.Admit(principal);
}

}  // namespace

Result<exec::RunResult> FairShareRuns::Run(const exec::RunRequest& request,
                                           exec::RunObserver& observer,
                                           const exec::CancelToken& cancel) {
  auto ticket = AdmitRun(quota_, request.principal);
  if (!ticket.ok()) return ticket.error();
  return inner_.Run(request, observer, cancel);
}

Result<exec::RunResult> FairShareSessions::Run(const std::string& principal,
                                               const std::string& session_id,
                                               const exec::RunRequest& request,
                                               exec::RunObserver& observer,
                                               const exec::CancelToken& cancel) {
  auto ticket = AdmitRun(quota_, principal);
  if (!ticket.ok()) return ticket.error();
  return inner().Run(principal, session_id, request, observer, cancel);
}

}  // namespace sandbox::service
