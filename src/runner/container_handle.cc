#include "sandbox/runner/container_handle.h"

namespace sandbox::runner {

void ContainerHandle::Kill() const {
  if (id_.empty() || engine_ == nullptr) return;
  auto status = engine_->Kill(id_, engine::DeadlineAfter(kKillTimeout));
  if (!status.ok() && logger_) {
    logger_->warn("kill container {}: {}", short_id(), status.error().ToString());
  }
}

void ContainerHandle::Remove() {
  if (id_.empty() || engine_ == nullptr) return;
  // The engine asks again on a transient error and waits for a removal already under way, so
  // "removed" means no longer listed (tests and shutdown count on it).
  auto status = engine_->Remove(id_, engine::DeadlineAfter(kRemoveTimeout));
  if (!status.ok() && logger_) {
    logger_->error("remove container {}: {}", short_id(), status.error().ToString());
  }
  id_.clear();
}

}  // namespace sandbox::runner
