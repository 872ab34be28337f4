// EngineHealth: which engines take new sandboxes now (docs/scale-out.md section 5). One thread per
// engine pings it every `interval` with a deadline of `ping_timeout`: `down_after` failures in a
// row mark it down (a killed dockerd refuses at once; a stalled one accepts and never answers,
// so only the deadline sees it), `up_after` answers in a row mark it up again. Listeners hear
// each change on the engine's watch thread: the service drops the sandboxes of an engine that
// went down and sweeps its leftovers before it comes back. An operator may drain an engine: it
// stays up but takes no new sandboxes.
//
// Thread-safety: every method from any thread. Listeners are added before Start() and are called
// one change at a time per engine (not under any lock of this class).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/engine/container_engine.h"

namespace sandbox::engine {

struct HealthOptions {
  std::chrono::milliseconds interval{1000};      // between two pings of one engine
  std::chrono::milliseconds ping_timeout{1000};  // a ping's deadline
  int down_after = 2;                            // failures in a row that mark it down
  int up_after = 3;                              // answers in a row that mark it up again
};

// One engine as the watch sees it.
struct EngineStatus {
  std::string name;
  bool up = true;
  bool draining = false;
  std::string why;                                // why it is down: the last ping's error
  std::chrono::system_clock::time_point since{};  // when `up` last changed (or the start)
};

// What a listener hears: `up` false when the engine went down (with `why`), true when it is back.
// A listener that returns false keeps the engine out of placements (e.g. its leftovers could not
// be swept); it is asked again at the next answered ping.
using HealthListener =
    std::function<bool(const ContainerEngine& engine, bool up, const std::string& why)>;

class EngineHealth {
 public:
  // Every engine starts up (the server connected it a moment ago). `engines` must outlive this.
  EngineHealth(EngineList engines, HealthOptions options);
  ~EngineHealth();  // Stop()
  EngineHealth(const EngineHealth&) = delete;
  EngineHealth& operator=(const EngineHealth&) = delete;

  void AddListener(HealthListener listener);
  // Starts the watch threads. Without it nothing is pinged and every engine stays up.
  void Start();
  void Stop();

  // Whether new sandboxes may go to the engine: up and not draining. An unknown name is not.
  bool Placeable(const std::string& engine) const;
  bool Up(const std::string& engine) const;
  // Sets or clears draining; false when no engine has that name.
  bool SetDraining(const std::string& engine, bool draining);
  std::vector<EngineStatus> Statuses() const;
  const EngineList& engines() const { return engines_; }

 private:
  struct Watched {
    const ContainerEngine* engine = nullptr;
    std::atomic<bool> up{true};
    std::atomic<bool> draining{false};
    std::string why;                              // under mu_
    std::chrono::system_clock::time_point since;  // under mu_
  };
  void Watch(Watched& watched);
  // Runs the listeners; false when any refused the change (up only).
  bool Tell(const ContainerEngine& engine, bool up, const std::string& why);

  const EngineList engines_;
  const HealthOptions options_;
  std::vector<std::unique_ptr<Watched>> watched_;
  std::vector<HealthListener> listeners_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last
};

}  // namespace sandbox::engine
