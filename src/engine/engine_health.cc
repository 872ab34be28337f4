#include "sandbox/engine/engine_health.h"

#include <utility>

namespace sandbox::engine {

EngineHealth::EngineHealth(EngineList engines, HealthOptions options)
    : engines_(std::move(engines)), options_(options) {
  const auto now = std::chrono::system_clock::now();
  for (const auto* engine : engines_) {
    auto w = std::make_unique<Watched>();
    w->engine = engine;
    w->since = now;
    watched_.push_back(std::move(w));
  }
}

EngineHealth::~EngineHealth() { Stop(); }

void EngineHealth::AddListener(HealthListener listener) {
  std::lock_guard lock(mu_);
  listeners_.push_back(std::move(listener));
}

void EngineHealth::Start() {
  std::lock_guard lock(mu_);
  if (!threads_.empty() || stop_) return;
  for (auto& w : watched_) threads_.emplace_back([this, &w = *w] { Watch(w); });
}

void EngineHealth::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

bool EngineHealth::Tell(const ContainerEngine& engine, bool up, const std::string& why) {
  std::vector<HealthListener> listeners;
  {
    std::lock_guard lock(mu_);
    listeners = listeners_;
  }
  bool accepted = true;
  for (const auto& listener : listeners) accepted = listener(engine, up, why) && accepted;
  return accepted;
}

void EngineHealth::Watch(Watched& w) {
  int failures = 0;
  int answers = 0;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    const Status ping = w.engine->Ping(DeadlineAfter(options_.ping_timeout));
    if (ping.ok()) {
      failures = 0;
      ++answers;
      // Back only after up_after answers in a row, and once the listeners took it back (its
      // leftovers swept): until then it gets no placements.
      if (!w.up && answers >= options_.up_after && Tell(*w.engine, true, {})) {
        std::lock_guard guard(mu_);
        w.up = true;
        w.why.clear();
        w.since = std::chrono::system_clock::now();
      }
    } else {
      answers = 0;
      ++failures;
      if (w.up && failures >= options_.down_after) {
        const std::string why = "no answer to " + std::to_string(failures) + " pings in a row (" +
                                ping.error().message() + ")";
        {
          std::lock_guard guard(mu_);
          w.up = false;
          w.why = why;
          w.since = std::chrono::system_clock::now();
        }
        Tell(*w.engine, false, why);
      }
    }
    lock.lock();
    cv_.wait_for(lock, options_.interval, [this] { return stop_; });
  }
}

bool EngineHealth::Placeable(const std::string& engine) const {
  for (const auto& w : watched_) {
    if (w->engine->name() == engine) return w->up && !w->draining;
  }
  return false;
}

bool EngineHealth::Up(const std::string& engine) const {
  for (const auto& w : watched_) {
    if (w->engine->name() == engine) return w->up;
  }
  return false;
}

bool EngineHealth::SetDraining(const std::string& engine, bool draining) {
  for (auto& w : watched_) {
    if (w->engine->name() == engine) {
      w->draining = draining;
      return true;
    }
  }
  return false;
}

std::vector<EngineStatus> EngineHealth::Statuses() const {
  std::lock_guard lock(mu_);
  std::vector<EngineStatus> out;
  for (const auto& w : watched_) {
    out.push_back({w->engine->name(), w->up, w->draining, w->why, w->since});
  }
  return out;
}

}  // namespace sandbox::engine
