// RAII ownership of one sandbox on its engine: the destructor removes it (kill and remove, see
// engine::ContainerEngine::Remove), so no path — error, exception, early return — leaks a
// container.
// Thread-safety: a handle is owned by one thread at a time; it is movable.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <string>

#include "sandbox/engine/container_engine.h"

namespace sandbox::runner {

class ContainerHandle {
 public:
  // The bound of a kill, and of a remove (the engine's retries and its wait for a removal
  // already under way included).
  static constexpr std::chrono::seconds kKillTimeout{10};
  static constexpr std::chrono::seconds kRemoveTimeout{40};

  ContainerHandle() = default;
  // `engine` must outlive the handle.
  ContainerHandle(const engine::ContainerEngine* engine, std::string id,
                  std::shared_ptr<spdlog::logger> logger)
      : engine_(engine), id_(std::move(id)), logger_(std::move(logger)) {}
  ~ContainerHandle() { Remove(); }

  ContainerHandle(ContainerHandle&& other) noexcept { *this = std::move(other); }
  ContainerHandle& operator=(ContainerHandle&& other) noexcept {
    if (this != &other) {
      Remove();
      engine_ = other.engine_;
      id_ = std::move(other.id_);
      logger_ = std::move(other.logger_);
      other.engine_ = nullptr;
      other.id_.clear();
    }
    return *this;
  }
  ContainerHandle(const ContainerHandle&) = delete;
  ContainerHandle& operator=(const ContainerHandle&) = delete;

  const std::string& id() const { return id_; }
  std::string short_id() const { return id_.substr(0, 12); }
  explicit operator bool() const { return !id_.empty(); }

  // Kills the container at once (SIGKILL); it stays owned and is removed later.
  void Kill() const;

  // Removes the container now; the handle is empty afterwards. Failures are logged: the
  // container carries the server's labels, so crash recovery removes it at the next start.
  void Remove();

  // Gives the container up without removing it (it is left to run on: a session container
  // that outlives its server). The handle is empty afterwards.
  void Release() {
    engine_ = nullptr;
    id_.clear();
  }

  // Abandons the container without a call to its engine: for an engine that is lost (a remove
  // through a stalled engine would wait for its whole deadline). Whatever is left there is
  // swept when the engine answers again. The handle is empty afterwards.
  void Forget() {
    engine_ = nullptr;
    id_.clear();
  }

 private:
  const engine::ContainerEngine* engine_ = nullptr;
  std::string id_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sandbox::runner
