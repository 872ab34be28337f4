// What the warm pool holds: a started sandbox ready for work, and the factory that makes one.
// The pool knows nothing of Docker; the runner implements these on top of a container and its
// harness, and unit tests use fakes.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "sandbox/core/result.h"

namespace sandbox::pool {

using Clock = std::chrono::steady_clock;

// Owns one sandbox; destroying it destroys the sandbox (the container is removed), so the
// pool cannot leak one on any path.
// Thread-safety: a sandbox is used by one holder at a time (the pool, or the lease holder);
// Healthy() may be called by the pool's maintenance thread only while it holds the sandbox.
class PooledSandbox {
 public:
  virtual ~PooledSandbox() = default;

  // A cheap liveness check of an idle sandbox (the harness answers a ping, the container runs).
  // A sandbox that fails it is destroyed and replaced.
  virtual bool Healthy() = 0;

  // False once the sandbox must not serve again: its zygote died, the protocol broke, or (fresh
  // mode) it served its one run. The pool destroys such a sandbox when its lease ends.
  virtual bool Reusable() const = 0;

  // Runs served so far; the pool retires a sandbox at its pool's max_runs.
  virtual int RunCount() const = 0;

  virtual Clock::time_point CreatedAt() const = 0;

  // Whether a run could start at once. A recycled sandbox may still be preparing for its next
  // run after it was returned (the harness forks the next run's processes after `done`, see
  // docs/harness-protocol.md); a run sent meanwhile waits for that. The pool lends prepared
  // sandboxes first. Called by the pool with its lock held, only while the sandbox is idle:
  // must not block (a non-blocking look at the sandbox's stream at most). It may find the
  // sandbox broken, and then reports it through Reusable().
  virtual bool Prepared() { return true; }

  // Started without the pool's preload (StartContext::behind_demand): the first sandboxes to
  // retire when the pool shrinks, since they serve their first run slower.
  virtual bool Lean() const { return false; }

  // For logs and metrics: the container id (short) or another stable name.
  virtual std::string Name() const = 0;
};

// What the pool knows when it begins a start, for the factory to choose how to start.
struct StartContext {
  // The pool is behind its demand: requests wait in Acquire() for a sandbox, or none is idle
  // and one waited within the last second (a client running back to back is between two
  // requests). A sandbox started now is most likely taken the moment it is ready.
  bool behind_demand = false;
};

// Creates and starts sandboxes of type T (a PooledSandbox) for one pool. Create() blocks until
// the sandbox is ready for work (container started, harness loaded, modules preloaded) or fails.
// Thread-safety: Create() may be called from several threads at once; CancelStarts() from any
// thread, also while Create() calls are in flight.
template <typename T>
class SandboxFactory {
 public:
  virtual ~SandboxFactory() = default;
  virtual Result<std::unique_ptr<T>> Create() = 0;
  // What the pool calls: Create() unless the factory starts differently by context.
  virtual Result<std::unique_ptr<T>> CreateFor(const StartContext& context) {
    (void)context;
    return Create();
  }

  // Makes the Create() calls in flight give up soon (they fail, leaving nothing behind) and
  // every later one fail at once. WarmPool::Shutdown() calls it before it waits for its start
  // workers, so a shutdown does not wait for a start (seconds, up to a start timeout). Must not
  // block. The default does nothing: starts in flight then run to their end.
  virtual void CancelStarts() {}
};

}  // namespace sandbox::pool
