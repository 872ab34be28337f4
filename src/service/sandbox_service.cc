#include "sandbox/service/sandbox_service.h"

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <list>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/core/json.h"
#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/egress_gateways.h"
#include "sandbox/service/pool_image.h"
#include "sandbox/service/session_record.h"

namespace sandbox::service {
namespace {

using nlohmann::json;

Error Invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

// Prints the interpreter's version and installed distributions as one JSON line.
constexpr const char* kInfoScript = R"PY(
import json, sys, platform
try:
    from importlib import metadata
    pkgs = sorted({(d.metadata["Name"] or "?"): d.version for d in metadata.distributions()}.items())
except Exception as e:
    pkgs = [["error", str(e)]]
print(json.dumps({"python": platform.python_version(), "implementation": platform.python_implementation(),
                  "packages": [{"name": n, "version": v} for n, v in pkgs]}))
)PY";

class NullObserver final : public exec::RunObserver {};

// One run watched by SandboxService::StartWatch until its `started`.
struct WatchedRun {
  const engine::ContainerEngine* engine = nullptr;  // the one the run's sandbox is on
  std::string container_id;
  std::atomic<bool> started{false};
  std::atomic<bool> lost{false};  // the watch found its container paused or gone
  std::string lost_why;           // written before `lost` is set
  exec::CancelToken cancel;       // the run's own token: the caller's, or the watch's
};

// Forwards a run's events and notes whether any reached the caller: until one has, the run
// may be repeated on another sandbox without the caller seeing two runs.
class RelayObserver final : public exec::RunObserver {
 public:
  RelayObserver(exec::RunObserver& target, WatchedRun& watched)
      : target_(target), watched_(watched) {}
  void OnStarted() override {
    delivered_ = true;
    watched_.started = true;
    target_.OnStarted();
  }
  void OnOutput(exec::Stream stream, std::string_view bytes) override {
    delivered_ = true;
    target_.OnOutput(stream, bytes);
  }
  void OnImage(const exec::Image& image) override {
    delivered_ = true;
    target_.OnImage(image);
  }
  void OnFile(const exec::OutputFile& file) override {
    delivered_ = true;
    target_.OnFile(file);
  }
  bool AnswersInput() const override { return target_.AnswersInput(); }
  void OnInputRequest(const exec::InputRequest& request, const exec::InputReply& reply) override {
    delivered_ = true;
    target_.OnInputRequest(request, reply);
  }
  bool delivered() const { return delivered_; }

 private:
  exec::RunObserver& target_;
  WatchedRun& watched_;
  bool delivered_ = false;
};

// The labels every container of `instance_id` carries.
engine::Labels InstanceLabels(const std::string& instance_id) {
  return {{std::string(runner::kManagedLabel), "true"},
          {std::string(runner::kInstanceLabel), instance_id}};
}

// What a look at a run's container may take (StartWatch, ExplainLoss), and a ping when a pool
// is busy (WithEngineState).
constexpr std::chrono::seconds kInspectTimeout{5};
constexpr std::chrono::seconds kPingTimeout{2};
// An engine back: its leftovers are listed and removed until a list finds none, this far apart,
// at most this many times more.
constexpr std::chrono::seconds kBackSweepPause{1};
constexpr int kBackSweepRounds = 10;

}  // namespace

// Inspects the containers of runs still waiting for `started` (a pipe hop, milliseconds, when
// the harness is alive) every kStartCheckAfter; cancels a run whose container is paused or
// gone, so it is retried at once instead of at its deadline. One thread for the service.
class SandboxService::StartWatch {
 public:
  explicit StartWatch(std::shared_ptr<spdlog::logger> logger)
      : logger_(std::move(logger)), thread_([this] { Loop(); }) {}
  ~StartWatch() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StartWatch(const StartWatch&) = delete;
  StartWatch& operator=(const StartWatch&) = delete;

  void Add(const std::shared_ptr<WatchedRun>& run) {
    std::lock_guard lock(mu_);
    runs_.push_back({run, std::chrono::steady_clock::now() + kStartCheckAfter});
  }
  void Remove(const std::shared_ptr<WatchedRun>& run) {
    std::lock_guard lock(mu_);
    runs_.remove_if([&](const Entry& e) { return e.run == run; });
  }
  // Every run in flight on `engine` is lost: cancelled at once, `why` its detail. Returns how
  // many.
  int LoseEngine(const engine::ContainerEngine& engine, const std::string& why) {
    std::vector<std::shared_ptr<WatchedRun>> lost;
    {
      std::lock_guard lock(mu_);
      for (const auto& e : runs_) {
        if (e.run->engine != &engine || e.run->lost) continue;
        e.run->lost_why = why;
        e.run->lost = true;
        lost.push_back(e.run);
      }
    }
    for (const auto& run : lost) run->cancel.Cancel();
    return static_cast<int>(lost.size());
  }

 private:
  struct Entry {
    std::shared_ptr<WatchedRun> run;
    std::chrono::steady_clock::time_point next_check;
  };

  void Loop() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(250));
      std::vector<std::shared_ptr<WatchedRun>> due;
      const auto now = std::chrono::steady_clock::now();
      for (auto& e : runs_) {
        if (e.run->started || e.run->lost || now < e.next_check) continue;
        e.next_check = now + kStartCheckAfter;
        due.push_back(e.run);
      }
      lock.unlock();
      for (const auto& run : due) Check(*run);
      lock.lock();
    }
  }

  void Check(WatchedRun& run) const {
    if (run.engine == nullptr) return;
    auto state = run.engine->Inspect(run.container_id, engine::DeadlineAfter(kInspectTimeout));
    std::string why;
    if (!state.ok() && state.error().code() == ErrorCode::kNotFound) {
      why = "its container no longer exists";
    } else if (state.ok() && state->paused) {
      why = "its container is paused";
    } else if (state.ok() && !state->running) {
      why = "its container is not running";
    }
    if (why.empty() || run.started) return;
    logger_->warn("sandbox {}: no `started` after {} ms and {}; giving up on it",
                  run.container_id.substr(0, 12), kStartCheckAfter.count(), why);
    run.lost_why = why;
    run.lost = true;
    run.cancel.Cancel();
  }

  std::shared_ptr<spdlog::logger> logger_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::list<Entry> runs_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

Result<int> RemoveLeftovers(const engine::ContainerEngine& engine, const std::string& instance_id,
                            const std::shared_ptr<spdlog::logger>& logger) {
  auto containers = engine.List(InstanceLabels(instance_id), engine.DefaultDeadline());
  if (!containers.ok()) return containers.error().WithContext("list leftover containers");
  int removed = 0;
  for (const auto& c : *containers) {
    auto status = engine.Remove(c.id, engine.DefaultDeadline());
    if (status.ok()) {
      ++removed;
    } else if (logger) {
      logger->warn("could not remove leftover container {}: {}", c.id.substr(0, 12),
                   status.error().ToString());
    }
  }
  return removed;
}

Result<SweepCounts> SweepLeftovers(const engine::ContainerEngine& engine,
                                   const SweepOptions& options, const OwnerProbe& probe,
                                   const std::shared_ptr<spdlog::logger>& logger) {
  auto containers = engine.List(InstanceLabels(options.instance_id), engine.DefaultDeadline());
  if (!containers.ok()) return containers.error().WithContext("list leftover containers");
  const std::int64_t now = std::time(nullptr);
  SweepCounts counts;
  for (const auto& c : *containers) {
    const std::string id = c.id.substr(0, 12);
    bool sweep = false;
    std::string reason;
    auto label = c.labels.find(std::string(kOwnerLabel));
    if (label == c.labels.end()) {
      sweep = SweepUnlabelled(c, options.unlabelled_max_life, now);
      reason = sweep ? "no owner label (an older version's) and " +
                           (c.state == "exited" || c.state == "dead"
                                ? "stopped"
                                : "older than " +
                                      std::to_string(options.unlabelled_max_life.count()) + " s")
                     : "no owner label (an older version's), " + c.state + " and younger than " +
                           std::to_string(options.unlabelled_max_life.count()) + " s";
    } else if (auto owner = ParseOwner(label->second)) {
      auto decision = DecideOwner(*owner, options.self, options.engine_local, probe);
      sweep = decision.verdict == OwnerVerdict::kGone;
      reason = decision.reason;
    } else {
      reason = "unreadable owner label \"" + label->second + "\"";
    }
    if (sweep && options.keep_sessions && c.state == "running" &&
        CheckSessionLabels(c.labels, options.instance_id).ok()) {
      // Its harness still runs and holds a session: the session manager decides (adopt it or
      // remove it) once it has asked the harness what it holds.
      counts.left_sessions.push_back(c);
      continue;
    }
    if (!sweep) {
      ++counts.kept;
      if (logger) {
        logger->info("instance \"{}\": leaving container {} alone: {}", options.instance_id, id,
                     reason);
      }
      continue;
    }
    auto status = engine.Remove(c.id, engine.DefaultDeadline());
    if (status.ok()) {
      ++counts.removed;
      if (logger) logger->info("removed leftover container {}: {}", id, reason);
    } else if (logger) {
      logger->warn("could not remove leftover container {}: {}", id, status.error().ToString());
    }
  }
  if (counts.removed > 0 && logger) {
    logger->info("removed {} container(s) left by an earlier run of instance \"{}\"",
                 counts.removed, options.instance_id);
  }
  return counts;
}

std::chrono::seconds LeftoverMaxLife(const config::Config& config) {
  using std::chrono::seconds;
  // A start (start_timeout), a run's grace and a margin on top of what a server keeps.
  constexpr seconds kMargin{10 * 60};
  seconds longest{0};
  for (const auto& pc : config.pools) {
    auto run = seconds(static_cast<std::int64_t>(pc.max_limits.timeout_s) + 1);
    longest = std::max(longest, std::chrono::duration_cast<seconds>(pc.max_age) + run);
  }
  if (config.sessions.enabled) {
    longest = std::max(longest, std::chrono::duration_cast<seconds>(config.sessions.max_lifetime));
  }
  return longest + kMargin;
}

SandboxService::SandboxService(const config::Config& config, engine::EngineList engines,
                               ServiceOptions options, std::shared_ptr<spdlog::logger> logger)
    : config_(config),
      engines_(std::move(engines)),
      options_(std::move(options)),
      logger_(std::move(logger)),
      // Admin changes of a pool's limits live in its maker; new runs take them.
      resolver_(
          config, options_.input,
          [this](const config::PoolConfig& pc) { return pools_.at(pc.name).maker->limits(); }),
      watch_(std::make_unique<StartWatch>(logger_)) {}

Result<std::unique_ptr<SandboxService>> SandboxService::Create(
    const config::Config& config, const engine::ContainerEngine& engine, ServiceOptions options,
    std::shared_ptr<spdlog::logger> logger) {
  return Create(config, engine::EngineList{&engine}, std::move(options), std::move(logger));
}

Result<std::unique_ptr<SandboxService>> SandboxService::Create(
    const config::Config& config, const engine::EngineList& engines, ServiceOptions options,
    std::shared_ptr<spdlog::logger> logger) {
  if (engines.empty()) return Error(ErrorCode::kUnavailable, "no container engine is connected");
  std::unique_ptr<SandboxService> service(
      new SandboxService(config, engines, std::move(options), std::move(logger)));
  for (const auto& pc : config.pools) {
    engine::EngineList& placeable = service->placeable_[pc.name];
    std::vector<std::string> refusals;
    for (const auto& name : config::PoolEngineNames(pc, config.docker)) {
      const engine::ContainerEngine* engine = engine::FindEngine(engines, name);
      Status usable =
          engine == nullptr
              ? Status(Error(ErrorCode::kUnavailable,
                             "it was not reachable when the server started (restart "
                             "the server once it answers)"))
              : CheckPoolImage(pc, engine->CheckImage(pc.image, engine->DefaultDeadline()));
      // One engine: its image is a start-up requirement, as it always was.
      if (!usable.ok() && engines.size() == 1) return usable.error();
      if (usable.ok()) {
        placeable.push_back(engine);
        continue;
      }
      std::string why = usable.error().message();
      if (engine != nullptr && usable.error().code() == ErrorCode::kNotFound) {
        // Another engine may have it: copying is quicker than building it there.
        why += "; or copy it from an engine that has it: docker save " + pc.image +
               " | docker -H <the host of engine " + name + "> --tlsverify load";
      }
      refusals.push_back("engine " + name + ": " + why);
      service->excluded_.push_back({pc.name, name, why});
      service->logger_->warn("pool '{}': engine {} is left out of it: {}", pc.name, name, why);
    }
    if (placeable.empty()) {
      std::string why;
      for (const auto& r : refusals) why += (why.empty() ? "" : "; ") + r;
      return Error(ErrorCode::kUnavailable,
                   "pool '" + pc.name + "' has no engine it can run on: " + why);
    }
  }
  service->pools_ = BuildPools(config, PoolPurpose::kRuns, service->options_, service->makers(),
                               service->logger_);
  return service;
}

SandboxService::~SandboxService() { Shutdown(); }

void SandboxService::Start() {
  for (auto& [name, entry] : pools_) entry.pool->Start();
}

void SandboxService::Shutdown() {
  for (auto& [name, entry] : pools_) entry.pool->Shutdown();
}

const PoolEntry* SandboxService::FindPool(const std::string& name) const {
  auto it = pools_.find(name.empty() ? config_.default_pool : name);
  return it == pools_.end() ? nullptr : &it->second;
}

bool SandboxService::EngineChanged(const engine::ContainerEngine& engine, bool up,
                                   const std::string& why) {
  const std::string& name = engine.name();
  if (!up) {
    const std::string lost = "engine " + name + " was lost (" + why + ")";
    logger_->error("{}: no new sandboxes there; its idle ones are dropped and its runs end", lost);
    const int dropped =
        RetireIdleOn(pools_, name, EngineExit::kLeave, "engine " + name + " is down");
    const int runs = watch_->LoseEngine(engine, lost);
    logger_->warn("engine {}: {} idle sandbox(es) dropped, {} run(s) in flight ended", name,
                  dropped, runs);
    return true;
  }
  // Back: what this instance left there (sandboxes dropped while it was down, runs that were in
  // flight) goes before it takes new sandboxes. A dockerd restarted after a kill lists the
  // containers it restores as it gets to them (CI saw a second one appear after the first
  // list), so the sweep repeats until a list finds none; nothing new of ours can appear there
  // meanwhile (no placements).
  int removed_total = 0;
  for (int round = 0;; ++round) {
    auto removed = RemoveLeftovers(engine, config_.instance_id, logger_);
    if (!removed.ok()) {
      logger_->warn(
          "engine {} answers again but its leftovers could not be removed ({}); it "
          "stays out of placements",
          name, removed.error().ToString());
      return false;
    }
    removed_total += *removed;
    if ((*removed == 0 && round > 0) || round >= kBackSweepRounds) break;
    std::this_thread::sleep_for(kBackSweepPause);
  }
  logger_->info(
      "engine {} is back: {} leftover container(s) of this instance removed; it takes "
      "new sandboxes again",
      name, removed_total);
  return true;
}

std::string SandboxService::EngineWords(const engine::ContainerEngine& engine) const {
  std::string words = "the " + std::string(engine.kind()) + " engine";
  if (engines_.size() > 1) words += " " + engine.name();
  return words;
}

SandboxService::Loss SandboxService::ExplainLoss(const runner::Sandbox& sandbox) const {
  const engine::ContainerEngine* engine = engine::FindEngine(engines_, sandbox.engine());
  if (engine == nullptr) return {false, "its engine \"" + sandbox.engine() + "\" is not known"};
  if (options_.health != nullptr && !options_.health->Up(engine->name())) {
    return {true, "engine " + engine->name() + " is down"};  // no call that could hang on it
  }
  auto state = engine->Inspect(sandbox.container_id(), engine::DeadlineAfter(kInspectTimeout));
  if (!state.ok()) {
    if (state.error().code() == ErrorCode::kNotFound) {
      return {true, "its container " + sandbox.Name() + " no longer exists (removed or killed)"};
    }
    // With several engines, one that does not answer has lost the sandbox for this server:
    // the run may go to another engine (it was not lost by its code).
    return {engines_.size() > 1,
            EngineWords(*engine) + " does not answer (" + state.error().message() + ")"};
  }
  if (state->paused) return {true, "its container was paused"};
  if (!state->running) {
    return {true, "its container exited with code " + std::to_string(state->exit_code)};
  }
  return {false, {}};
}

Error SandboxService::WithEngineState(const PoolEntry& entry, const Error& error) const {
  if (error.code() != ErrorCode::kBusy) return error;
  // "Busy" may really be engines that no longer answer: starts hang or fail. Say so.
  std::string silent;
  for (const auto* engine : placeable_.at(entry.config->name)) {
    auto ping = engine->Ping(engine::DeadlineAfter(kPingTimeout));
    if (ping.ok()) return error;
    silent += (silent.empty() ? "" : "; ") + EngineWords(*engine) + " does not answer (" +
              ping.error().message() + ")";
  }
  return Error(ErrorCode::kUnavailable,
               silent + ", so no sandbox could be had: " + error.message());
}

Result<SandboxLease> SandboxService::AcquireFor(const PoolEntry& entry,
                                                const std::string& principal, bool verify) const {
  for (int tried = 0;; ++tried) {
    auto lease = entry.pool->Acquire(std::nullopt, principal);
    if (!lease.ok() || !verify) return lease;
    if ((*lease)->Healthy() || tried >= entry.pool->sizes().max_total) return lease;
    lease->Discard();  // it does not answer either: the pool destroys and replaces it
  }
}

Result<exec::RunResult> SandboxService::Run(const exec::RunRequest& request,
                                            exec::RunObserver& observer,
                                            const exec::CancelToken& cancel) {
  auto limits = resolver_.ResolveRun(request);
  if (!limits.ok()) return limits.error();
  auto network = resolver_.ResolveNetwork(request.pool, request.network);
  if (!network.ok()) return network.error();
  const PoolEntry* entry = FindPool(request.pool);
  for (int attempt = 1;; ++attempt) {
    auto lease = AcquireFor(*entry, request.principal, attempt > 1);
    if (!lease.ok()) return WithEngineState(*entry, lease.error());
    runner::Sandbox* sandbox = lease->get();
    auto watched = std::make_shared<WatchedRun>();
    watched->engine = engine::FindEngine(engines_, sandbox->engine());
    watched->container_id = sandbox->container_id();
    // The caller's token outlives this run and never drops a callback: hold the run's state.
    cancel.OnCancel([watched] { watched->cancel.Cancel(); });
    RelayObserver relay(observer, *watched);
    if (*network) {
      // Narrower for this run only: the code never runs with more than the request allows.
      if (auto narrowed = sandbox->SetNetwork(&**network); !narrowed.ok()) {
        if (!sandbox->Reusable()) lease->Discard();
        return narrowed.error().WithContext("narrow the sandbox's network");
      }
    }
    watch_->Add(watched);
    auto result = sandbox->Run(request.code, request.files, *limits, relay, watched->cancel);
    watch_->Remove(watched);
    if (*network) {
      // Back to the pool's policy; a sandbox where that failed is not reused.
      if (auto restored = sandbox->SetNetwork(nullptr); !restored.ok()) {
        logger_->warn(
            "pool '{}': sandbox {}: its pool's network policy could not be restored "
            "({}); it is replaced",
            entry->config->name, sandbox->Name(), restored.error().message());
      }
    }
    if (!sandbox->Reusable()) lease->Discard();
    const bool lost_by_watch = watched->lost && !cancel.IsCancelled();
    if (lost_by_watch) {
      // Its engine is down: the container is left to the sweep when the engine is back, so
      // destroying the sandbox calls nothing that could hang on it.
      if (options_.health != nullptr && !options_.health->Up(sandbox->engine())) sandbox->Leave();
      lease->Discard();
      result.verdict = exec::Verdict::kInternal;
      result.detail = relay.delivered() ? "the run's sandbox was lost"
                                        : "the sandbox was lost before the run started";
    }
    if (result.verdict != exec::Verdict::kInternal) return result;
    const Loss loss = lost_by_watch ? Loss{true, watched->lost_why} : ExplainLoss(*sandbox);
    if (attempt == 1 && loss.gone && !relay.delivered() && !cancel.IsCancelled()) {
      // Gone before its code ran: nothing reached the caller, so run it on another sandbox.
      logger_->warn(
          "pool '{}': sandbox {} was lost before the run started ({}; {}); running it on "
          "another sandbox",
          entry->config->name, sandbox->Name(), result.detail, loss.why);
      continue;
    }
    if (!loss.why.empty()) result.detail += "; " + loss.why;
    return result;
  }
}

Result<exec::ServiceInfo> SandboxService::Info() {
  exec::ServiceInfo info;
  json pools = json::array();
  for (const auto& [name, entry] : pools_) {
    const auto& pc = *entry.config;
    auto stats = entry.pool->stats();
    pools.push_back({{"name", name},
                     {"mode", std::string(config::PoolModeName(pc.mode))},
                     {"image", pc.image},
                     {"runtime", pc.runtime.empty() ? "runc" : pc.runtime},
                     {"limits", config::LimitsJson(entry.maker->limits())},
                     {"max_limits", config::LimitsJson(pc.max_limits)},
                     {"python", entry.maker->python_version()},
                     {"executables", ExecutablesOf(name)},
                     // What its image was built with on top of the sandbox image (checked
                     // against the image's labels at start-up).
                     {"extra_packages", {{"debian", pc.packages}, {"pip", pc.pip_packages}}},
                     // What its code may reach (docs/network.md).
                     {"network", config::DescribeNetworkPolicy(NetworkOf(pc))},
                     {"idle", stats.idle},
                     {"leased", stats.leased},
                     {"starting", stats.starting},
                     {"max_total", stats.sizes.max_total},
                     {"engines", PoolEnginesJson(pc, entry)}});
  }
  // Each engine's state (up, down, draining) and where each pool's sandboxes are.
  info.info["engines"] = Engines();
  info.info["default_pool"] = config_.default_pool;
  if (const auto* pool = config::FindPool(config_, config_.default_pool)) {
    info.info["network"] = config::DescribeNetworkPolicy(NetworkOf(*pool));
  }
  // What is installed, probed once per image (pools sharing an image share the answer): a
  // pool built with extra packages lists them like the default pool does.
  for (auto& pool : pools) {
    const std::string name = pool["name"];
    auto probed = ProbePackages(name, pool["image"]);
    if (name == config_.default_pool) {
      if (!probed.ok()) return probed.error().WithContext("sandbox_info");
      info.info["python"] = (*probed)["python"];
      info.info["packages"] = (*probed)["packages"];
    }
    if (probed.ok()) {
      pool["packages"] = (*probed)["packages"];
    } else {
      pool["packages_error"] = probed.error().ToString();  // e.g. busy: asked again next time
    }
  }
  info.info["pools"] = std::move(pools);
  return info;
}

json SandboxService::PoolEnginesJson(const config::PoolConfig& pc, const PoolEntry& entry) const {
  const auto placements = entry.maker->placements();
  json out = json::array();
  for (const auto& name : config::PoolEngineNames(pc, config_.docker)) {
    json one = {{"name", name}, {"state", "placed"}};
    for (const auto& x : excluded_) {
      if (x.pool == pc.name && x.engine == name) {
        one["state"] = "excluded";
        one["why"] = x.why;
      }
    }
    for (const auto& p : placements) {
      if (p.engine != name) continue;
      one["sandboxes"] = p.alive;
      one["starting"] = p.starting;
      if (p.backing_off) one["last_start_error"] = p.last_error;
    }
    out.push_back(std::move(one));
  }
  return out;
}

Result<json> SandboxService::ProbePackages(const std::string& pool, const std::string& image) {
  {
    std::lock_guard lock(info_mu_);
    if (auto it = packages_.find(image); it != packages_.end()) return it->second;
  }
  exec::RunRequest probe;
  probe.code = kInfoScript;
  probe.pool = pool;
  NullObserver observer;
  exec::CancelToken cancel;
  auto result = Run(probe, observer, cancel);
  if (!result.ok()) return result.error();
  if (result->verdict != exec::Verdict::kOk) {
    return Error(ErrorCode::kInternal,
                 "sandbox_info probe failed: " + result->detail + result->stderr_text);
  }
  auto probe_json = ParseJson(result->stdout_text);
  if (!probe_json.ok() || !probe_json->is_object())
    return Error(ErrorCode::kInternal, "sandbox_info probe printed no JSON object");
  std::lock_guard lock(info_mu_);
  return packages_.insert_or_assign(image, std::move(probe_json).value()).first->second;
}

namespace {

// `paths` with the python/python3 sibling of each (images ship both names for one
// interpreter), first occurrence kept.
std::vector<std::string> WithSiblings(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& path) {
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  };
  for (const auto& path : paths) {
    add(path);
    if (path.size() > 7 && path.compare(path.size() - 7, 7, "/python") == 0) add(path + "3");
    if (path.size() > 8 && path.compare(path.size() - 8, 8, "/python3") == 0) {
      add(path.substr(0, path.size() - 1));
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> SandboxService::DeclaredExecutables(const PoolEntry& entry) const {
  const auto& pc = *entry.config;
  std::vector<std::string> paths = {pc.python};
  paths.insert(paths.end(), pc.executables.begin(), pc.executables.end());
  if (pc.name == config_.default_pool) {
    paths.push_back("/snekbin/python/default/bin/python");
    paths.push_back("/usr/local/bin/python");
  }
  return WithSiblings(paths);
}

std::vector<std::string> SandboxService::LearnedExecutables(const PoolEntry& entry) const {
  const std::string version = entry.maker->python_version();
  if (version.empty()) return {};
  return WithSiblings({"/snekbin/python/" + version + "/bin/python"});
}

std::vector<std::string> SandboxService::ExecutablesOf(const std::string& pool) const {
  const PoolEntry* entry = FindPool(pool);
  if (entry == nullptr) return {};
  auto out = DeclaredExecutables(*entry);
  for (auto& path : LearnedExecutables(*entry)) {
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(std::move(path));
  }
  return out;
}

Result<std::string> SandboxService::PoolForExecutable(const std::string& path) {
  // The default pool first: with two pools of one version, the versioned path is its.
  std::vector<const PoolEntry*> order = {FindPool(config_.default_pool)};
  for (const auto& pc : config_.pools) {
    if (pc.name != config_.default_pool) order.push_back(FindPool(pc.name));
  }
  auto answers = [&path](const std::vector<std::string>& paths) {
    return std::find(paths.begin(), paths.end(), path) != paths.end();
  };
  // Declared paths win over learned ones, so a pool's explicit claim is never shadowed.
  for (const auto* entry : order) {
    if (answers(DeclaredExecutables(*entry))) return entry->config->name;
  }
  for (const auto* entry : order) {
    if (answers(LearnedExecutables(*entry))) return entry->config->name;
  }
  std::string served;
  for (const auto* entry : order) {
    for (const auto& p : ExecutablesOf(entry->config->name)) {
      served += (served.empty() ? "" : ", ") + p;
    }
  }
  return Invalid("executable_path: \"" + path +
                 "\" is not an interpreter of this server (served: " + served + ")");
}

std::vector<std::pair<std::string, pool::PoolStats>> SandboxService::PoolStats() const {
  std::vector<std::pair<std::string, pool::PoolStats>> out;
  for (const auto& [name, entry] : pools_) out.emplace_back(name, entry.pool->stats());
  return out;
}

}  // namespace sandbox::service

namespace sandbox::service {

std::vector<std::string> SandboxService::PoolNames() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : pools_) names.push_back(name);
  return names;
}

std::optional<PoolSettings> SandboxService::Settings(const std::string& pool) const {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return std::nullopt;
  const PoolEntry& entry = it->second;
  PoolSettings settings;
  settings.name = pool;
  settings.mode = std::string(config::PoolModeName(entry.config->mode));
  settings.image = entry.config->image;
  settings.sizes = entry.pool->sizes();
  const pool::AutoscaleOptions a = entry.pool->autoscale();
  if (a.enabled) {
    settings.autoscale = {a.enabled, a.min_idle_floor, a.min_idle_ceiling, a.headroom,
                          std::chrono::duration_cast<std::chrono::seconds>(a.window)};
  } else {
    settings.autoscale = entry.config->autoscale;  // its other fields as configured
    settings.autoscale.enabled = false;
  }
  settings.limits = entry.maker->limits();
  settings.max_limits = entry.config->max_limits;
  settings.network = NetworkOf(*entry.config);
  return settings;
}

std::optional<pool::PoolStats> SandboxService::Stats(const std::string& pool) const {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return std::nullopt;
  return it->second.pool->stats();
}

config::NetworkPolicy SandboxService::NetworkOf(const config::PoolConfig& pool) const {
  if (options_.egress != nullptr) {
    if (auto live = options_.egress->Policy(pool.name)) return *live;
  }
  return pool.network;
}

bool SandboxService::Apply(const std::string& pool, const PoolSettings& settings) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return false;
  PoolEntry& entry = it->second;
  if (!(entry.maker->limits() == settings.limits)) entry.maker->SetLimits(settings.limits);
  entry.pool->Resize(settings.sizes);
  if (!(settings.network == NetworkOf(*entry.config)) && options_.egress != nullptr) {
    // The tuner checked it (same mode, valid); the proxies follow before this returns.
    if (auto set = options_.egress->SetPolicy(pool, settings.network); !set.ok()) {
      logger_->warn("pool '{}': the new network policy did not reach every proxy: {}", pool,
                    set.error().message());
    }
  }
  const auto& a = settings.autoscale;
  const pool::AutoscaleOptions wanted{a.enabled, a.min_idle_floor, a.min_idle_ceiling, a.headroom,
                                      a.window};
  const pool::AutoscaleOptions now = entry.pool->autoscale();
  // Only a real change restarts the autoscaler (and its demand history).
  if ((wanted.enabled || now.enabled) && !(wanted == now)) entry.pool->SetAutoscale(wanted);
  return true;
}

std::optional<pool::DrainProgress> SandboxService::Drain(const std::string& pool) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return std::nullopt;
  return it->second.pool->Drain();
}

}  // namespace sandbox::service

namespace sandbox::service {

std::vector<std::pair<std::string, std::string>> SandboxService::PoolsWithoutEngine() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (options_.health == nullptr) return out;
  for (const auto& [pool, engines] : placeable_) {
    std::string why;
    bool any = false;
    for (const auto* engine : engines) {
      const bool up = options_.health->Up(engine->name());
      if (options_.health->Placeable(engine->name())) any = true;
      why += (why.empty() ? "" : ", ") + engine->name() + (up ? " draining" : " down");
    }
    if (!any) out.emplace_back(pool, "has no engine that takes new sandboxes (" + why + ")");
  }
  return out;
}

nlohmann::json SandboxService::Engines() const {
  json out = json::array();
  std::vector<engine::EngineStatus> statuses;
  if (options_.health != nullptr) statuses = options_.health->Statuses();
  for (const auto* engine : engines_) {
    json one = {{"name", engine->name()}, {"kind", std::string(engine->kind())}, {"state", "up"}};
    for (const auto& s : statuses) {
      if (s.name != engine->name()) continue;
      one["state"] = !s.up ? "down" : s.draining ? "draining" : "up";
      if (!s.why.empty()) one["why"] = s.why;
      one["since"] =
          std::chrono::duration_cast<std::chrono::seconds>(s.since.time_since_epoch()).count();
    }
    json pools = json::array();
    for (const auto& [name, entry] : pools_) {
      for (auto pool : PoolEnginesJson(*entry.config, entry)) {
        if (pool["name"] != engine->name()) continue;
        pool["name"] = name;
        pools.push_back(std::move(pool));
      }
    }
    one["pools"] = std::move(pools);
    out.push_back(std::move(one));
  }
  return out;
}

Result<nlohmann::json> SandboxService::DrainEngine(const std::string& name, bool drain) {
  const engine::ContainerEngine* engine = engine::FindEngine(engines_, name);
  if (engine == nullptr) {
    std::string known;
    for (const auto* e : engines_) known += (known.empty() ? "" : ", ") + e->name();
    return Error(ErrorCode::kNotFound, "no engine \"" + name + "\" (engines: " + known + ")");
  }
  if (options_.health == nullptr) {
    return Error(ErrorCode::kConflict,
                 "engine " + name +
                     " is this server's only engine: drain its pools instead (POST "
                     "/admin/pools/{name}/drain)");
  }
  options_.health->SetDraining(name, drain);
  if (drain) {
    const int retired =
        RetireIdleOn(pools_, name, EngineExit::kRemove, "engine " + name + " is draining");
    logger_->info("engine {} drains: no new sandboxes there, {} idle one(s) retired", name,
                  retired);
  } else {
    logger_->info("engine {} takes new sandboxes again (undrained)", name);
  }
  for (auto& one : Engines()) {
    if (one["name"] == name) return one;
  }
  return json::object();
}

}  // namespace sandbox::service
