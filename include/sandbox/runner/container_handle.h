// RAII ownership of one container: the destructor force-removes it (and its anonymous
// volumes), so no path — error, exception, early return — leaks a container.
// Thread-safety: a handle is owned by one thread at a time; it is movable.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

#include "sandbox/docker/client.h"

namespace sandbox::runner {

class ContainerHandle {
 public:
  ContainerHandle() = default;
  ContainerHandle(const docker::Client* client, std::string id,
                  std::shared_ptr<spdlog::logger> logger)
      : client_(client), id_(std::move(id)), logger_(std::move(logger)) {}
  ~ContainerHandle() { Remove(); }

  ContainerHandle(ContainerHandle&& other) noexcept { *this = std::move(other); }
  ContainerHandle& operator=(ContainerHandle&& other) noexcept {
    if (this != &other) {
      Remove();
      client_ = other.client_;
      id_ = std::move(other.id_);
      logger_ = std::move(other.logger_);
      other.client_ = nullptr;
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
    client_ = nullptr;
    id_.clear();
  }

 private:
  const docker::Client* client_ = nullptr;
  std::string id_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sandbox::runner
