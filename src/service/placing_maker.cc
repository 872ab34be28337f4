#include "sandbox/service/placing_maker.h"

#include <algorithm>
#include <random>
#include <utility>

#include "sandbox/runner/container_handle.h"
#include "sandbox/service/egress_gateways.h"

namespace sandbox::service {
namespace {

// A sandbox counted on its engine while it exists: every call goes to the sandbox it wraps.
class PlacedSandbox final : public runner::Sandbox {
 public:
  PlacedSandbox(std::unique_ptr<runner::Sandbox> inner, std::shared_ptr<std::atomic<int>> alive)
      : inner_(std::move(inner)), alive_(std::move(alive)) {}
  ~PlacedSandbox() override {
    inner_.reset();  // the container is removed first, then it no longer counts
    alive_->fetch_sub(1);
  }
  PlacedSandbox(const PlacedSandbox&) = delete;
  PlacedSandbox& operator=(const PlacedSandbox&) = delete;

  bool Healthy() override { return inner_->Healthy(); }
  bool Reusable() const override { return inner_->Reusable(); }
  int RunCount() const override { return inner_->RunCount(); }
  pool::Clock::time_point CreatedAt() const override { return inner_->CreatedAt(); }
  bool Prepared() override { return inner_->Prepared(); }
  bool Lean() const override { return inner_->Lean(); }
  std::string Name() const override { return inner_->Name(); }

  exec::RunResult Run(const std::string& code, const std::vector<exec::InputFile>& files,
                      const runner::RunLimits& limits, exec::RunObserver& observer,
                      const exec::CancelToken& cancel) override {
    return inner_->Run(code, files, limits, observer, cancel);
  }
  Result<runner::PingInfo> Ping() override { return inner_->Ping(); }
  Status SetNetwork(const config::NetworkPolicy* policy) override {
    return inner_->SetNetwork(policy);
  }
  const std::string& container_id() const override { return inner_->container_id(); }
  const std::string& engine() const override { return inner_->engine(); }
  const std::string& session_id() const override { return inner_->session_id(); }
  Status BeginSession(const runner::RunLimits& limits, const runner::SessionTerms& terms) override {
    return inner_->BeginSession(limits, terms);
  }
  Result<runner::ResumeInfo> Resume() override { return inner_->Resume(); }
  Result<std::vector<exec::SessionFile>> PutFiles(
      const std::vector<exec::InputFile>& files) override {
    return inner_->PutFiles(files);
  }
  Result<exec::SessionFileList> ListFiles() override { return inner_->ListFiles(); }
  Result<exec::OutputFile> GetFile(const std::string& path, std::int64_t max_bytes) override {
    return inner_->GetFile(path, max_bytes);
  }
  Status DeleteFile(const std::string& path) override { return inner_->DeleteFile(path); }
  std::string TakeSessionNotice() override { return inner_->TakeSessionNotice(); }
  void Leave() override { inner_->Leave(); }

 private:
  std::unique_ptr<runner::Sandbox> inner_;
  std::shared_ptr<std::atomic<int>> alive_;
};

std::uint64_t SeedOf(std::uint64_t seed) {
  if (seed != 0) return seed;
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) | device();
}

}  // namespace

PlacingMaker::PlacingMaker(std::vector<EngineMaker> makers, PlacingOptions options,
                           std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)), logger_(std::move(logger)), rng_(SeedOf(options_.seed)) {
  for (auto& em : makers) {
    Slot slot;
    slot.engine = em.engine;
    slot.maker = std::move(em.maker);
    slots_.push_back(std::move(slot));
  }
}

std::chrono::steady_clock::time_point PlacingMaker::Now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

std::optional<std::size_t> PlacingMaker::Place(const std::vector<bool>& tried) {
  const auto now = Now();
  std::vector<engine::EngineLoad> loads;
  loads.reserve(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    engine::EngineLoad load;
    const bool healthy =
        options_.health == nullptr || options_.health->Placeable(slot.engine->name());
    load.up = healthy && !tried[i] && now >= slot.retry_at;
    load.idle = slot.alive->load();
    load.starting = slot.starting;
    load.max_concurrent_starts = std::max(1, options_.max_concurrent_starts);
    loads.push_back(load);
  }
  auto chosen = engine::Choose(loads, engine::Purpose::kStart, rng_);
  if (!chosen) {
    // Every engine not yet tried is backing off or at its start limit: the one whose back-off
    // ends first rather than no start at all (the pool bounds its starts in flight itself).
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (tried[i]) continue;
      if (options_.health != nullptr && !options_.health->Placeable(slots_[i].engine->name())) {
        continue;  // down or draining: never, not even as the last resort
      }
      if (!chosen || slots_[i].retry_at < slots_[*chosen].retry_at) chosen = i;
    }
  }
  if (chosen) ++slots_[*chosen].starting;
  return chosen;
}

PlacingMaker::Made PlacingMaker::Start(const std::function<Made(SandboxMaker&)>& start) {
  std::vector<bool> tried(slots_.size(), false);
  std::optional<Error> last;
  for (;;) {
    std::optional<std::size_t> placed;
    {
      std::lock_guard lock(mu_);
      placed = Place(tried);
    }
    if (!placed) break;
    Slot& slot = slots_[*placed];
    tried[*placed] = true;
    auto made = start(*slot.maker);
    std::lock_guard lock(mu_);
    --slot.starting;
    if (made.ok()) {
      slot.failures_in_row = 0;
      slot.retry_at = {};
      slot.last_error.clear();
      return Counted(slot, std::move(*made));
    }
    const Error& error = made.error();
    // A cancelled start (shutdown) says nothing of the engine, and nothing else is tried.
    if (error.code() == ErrorCode::kCancelled) return error;
    ++slot.failures_in_row;
    auto pause = options_.backoff_first;
    for (int i = 1; i < slot.failures_in_row && pause < options_.backoff_max; ++i) pause *= 2;
    pause = std::min(pause, options_.backoff_max);
    slot.retry_at = Now() + pause;
    slot.last_error = error.message();
    if (logger_) {
      logger_->warn(
          "pool '{}': a start on engine {} failed ({} in a row; passed over for {} ms): {}",
          options_.pool, slot.engine->name(), slot.failures_in_row, pause.count(), error.message());
    }
    last = error.WithContext("engine " + slot.engine->name());
  }
  if (last) return *last;
  std::string states;
  if (options_.health != nullptr) {
    for (const auto& s : options_.health->Statuses()) {
      if (SlotOf(s.name) == nullptr) continue;
      states += (states.empty() ? "" : ", ") + s.name + " " +
                (!s.up        ? "down"
                 : s.draining ? "draining"
                              : "up");
    }
  }
  return Error(ErrorCode::kUnavailable, "pool '" + options_.pool +
                                            "' has no engine that takes new sandboxes now" +
                                            (states.empty() ? "" : " (" + states + ")"));
}

std::unique_ptr<runner::Sandbox> PlacingMaker::Counted(Slot& slot,
                                                       std::unique_ptr<runner::Sandbox> sandbox) {
  slot.alive->fetch_add(1);
  return std::make_unique<PlacedSandbox>(std::move(sandbox), slot.alive);
}

Result<std::unique_ptr<runner::Sandbox>> PlacingMaker::Create() {
  return CreateFor(pool::StartContext{});
}

Result<std::unique_ptr<runner::Sandbox>> PlacingMaker::CreateFor(
    const pool::StartContext& context) {
  return Start([&context](SandboxMaker& maker) { return maker.CreateFor(context); });
}

Result<std::unique_ptr<runner::Sandbox>> PlacingMaker::StartForSession(
    const std::string& session_id) {
  return Start([&session_id](SandboxMaker& maker) { return maker.StartForSession(session_id); });
}

PlacingMaker::Slot* PlacingMaker::SlotOf(const std::string& engine) {
  for (auto& slot : slots_) {
    if (slot.engine->name() == engine) return &slot;
  }
  return nullptr;
}

Result<std::unique_ptr<runner::Sandbox>> PlacingMaker::Adopt(const engine::Listed& container) {
  Slot* slot = SlotOf(container.engine);
  if (slot == nullptr) {
    return Error(ErrorCode::kNotFound, "pool '" + options_.pool + "' does not run on engine \"" +
                                           container.engine + "\"");
  }
  auto adopted = slot->maker->Adopt(container);
  if (!adopted.ok()) return adopted.error();
  std::lock_guard lock(mu_);
  return Counted(*slot, std::move(*adopted));
}

void PlacingMaker::Remove(const engine::Listed& container) {
  if (Slot* slot = SlotOf(container.engine)) {
    slot->maker->Remove(container);
  } else if (const auto* engine = engine::FindEngine(options_.all_engines, container.engine)) {
    runner::ContainerHandle(engine, container.id, logger_).Remove();
  }
}

void PlacingMaker::CancelStarts() {
  for (auto& slot : slots_) slot.maker->CancelStarts();
}

config::Limits PlacingMaker::limits() const { return slots_.front().maker->limits(); }

void PlacingMaker::SetLimits(const config::Limits& limits) {
  for (auto& slot : slots_) slot.maker->SetLimits(limits);
}

std::string PlacingMaker::python_version() const {
  for (const auto& slot : slots_) {
    std::string version = slot.maker->python_version();
    if (!version.empty()) return version;
  }
  return {};
}

std::vector<EnginePlacement> PlacingMaker::placements() const {
  std::lock_guard lock(mu_);
  const auto now = Now();
  std::vector<EnginePlacement> out;
  for (const auto& slot : slots_) {
    out.push_back({slot.engine->name(), slot.alive->load(), slot.starting, slot.failures_in_row,
                   now < slot.retry_at, slot.last_error});
  }
  return out;
}

MakerFactory PlacingMakersOn(PlaceableEngines placeable, engine::EngineList all,
                             const engine::EngineHealth* health,
                             const std::shared_ptr<spdlog::logger>& logger,
                             EgressGateways* egress) {
  return [placeable = std::move(placeable), all = std::move(all), health, logger,
          egress](runner::SandboxSetup setup) -> std::unique_ptr<SandboxMaker> {
    auto link = [&](const engine::ContainerEngine& engine) -> runner::EgressLink* {
      return egress != nullptr ? egress->For(engine, setup.pool) : nullptr;
    };
    if (all.size() == 1) {
      runner::EgressLink* one = link(*all.front());
      return std::make_unique<HarnessSandboxMaker>(*all.front(), std::move(setup), logger, one);
    }
    auto it = placeable.find(setup.pool.name);
    // Every pool has an engine (SandboxService refuses to start otherwise); all as a backstop.
    const engine::EngineList& engines =
        it == placeable.end() || it->second.empty() ? all : it->second;
    PlacingOptions options;
    options.pool = setup.pool.name;
    options.all_engines = all;
    options.health = health;
    options.max_concurrent_starts = setup.pool.max_concurrent_starts;
    std::vector<EngineMaker> makers;
    for (const auto* engine : engines) {
      makers.push_back(
          {engine, std::make_unique<HarnessSandboxMaker>(*engine, setup, logger, link(*engine))});
    }
    return std::make_unique<PlacingMaker>(std::move(makers), std::move(options), logger);
  };
}

}  // namespace sandbox::service
