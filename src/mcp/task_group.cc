#include "sandbox/mcp/task_group.h"

#include <system_error>
#include <thread>

#include "sandbox/core/log_context.h"

namespace sandbox::mcp {

bool TaskGroup::Spawn(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (running_ >= max_tasks_) return false;
    ++running_;
  }
  try {
    // The task works for the request that spawned it: its log lines name that request.
    std::thread([this, task = std::move(task),
                 request_id = std::string(CurrentRequestId())]() mutable {
      const ScopedRequestId scoped(request_id);
      task();
      task = nullptr;  // release what it captured before Wait() can return
      std::lock_guard lock(mu_);
      --running_;
      idle_.notify_all();  // under the lock: Wait() may destroy *this right after
    }).detach();
  } catch (const std::system_error&) {
    std::lock_guard lock(mu_);
    --running_;
    idle_.notify_all();
    return false;
  }
  return true;
}

void TaskGroup::Wait() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return running_ == 0; });
}

std::size_t TaskGroup::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

}  // namespace sandbox::mcp
