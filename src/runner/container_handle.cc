#include "sandbox/runner/container_handle.h"

#include <chrono>
#include <thread>

namespace sandbox::runner {

void ContainerHandle::Kill() const {
  if (id_.empty() || client_ == nullptr) return;
  auto status =
      client_->KillContainer(id_, "SIGKILL", docker::CallOptions::Within(std::chrono::seconds(10)));
  // 409 (not running) means it is already dead, which is what was asked.
  if (!status.ok() && status.error().code() != ErrorCode::kConflict && logger_) {
    logger_->warn("kill container {}: {}", short_id(), status.error().ToString());
  }
}

void ContainerHandle::Remove() {
  if (id_.empty() || client_ == nullptr) return;
  docker::RemoveOptions options;
  options.force = true;
  options.volumes = true;
  auto status =
      client_->RemoveContainer(id_, options, docker::CallOptions::Within(std::chrono::seconds(30)));
  // A container exiting at the moment of the force-remove makes dockerd answer 500 "Could not
  // kill running container ..., cannot remove - Container ... is not running" (seen once in a
  // 1-hour soak; the container then stayed behind, exited, until the next start-up's sweep).
  // The state settles within moments: ask again a few times.
  for (const auto delay : {std::chrono::milliseconds(100), std::chrono::milliseconds(400),
                           std::chrono::milliseconds(1500)}) {
    if (status.ok() || status.error().code() != ErrorCode::kEngine) break;
    if (logger_) {
      logger_->info("remove container {}: {}; retrying", short_id(), status.error().message());
    }
    std::this_thread::sleep_for(delay);
    status = client_->RemoveContainer(id_, options,
                                      docker::CallOptions::Within(std::chrono::seconds(30)));
  }
  // 404: already gone. 409: the engine is already removing it (AutoRemove after exit); wait
  // until it is gone, so "removed" means no longer listed (tests and shutdown count on it).
  if (!status.ok() && status.error().code() == ErrorCode::kConflict) {
    // The engine's own wait; 404 if the removal finished in between.
    auto removed = client_->WaitContainer(id_, docker::WaitCondition::kRemoved,
                                          docker::CallOptions::Within(std::chrono::seconds(10)));
    if (!removed.ok() && removed.error().code() != ErrorCode::kNotFound && logger_) {
      logger_->warn("remove container {}: {}", short_id(), removed.error().ToString());
    }
  } else if (!status.ok() && status.error().code() != ErrorCode::kNotFound && logger_) {
    logger_->error("remove container {}: {}", short_id(), status.error().ToString());
  }
  id_.clear();
}

}  // namespace sandbox::runner
