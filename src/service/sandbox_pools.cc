#include "sandbox/service/sandbox_pools.h"

#include <algorithm>
#include <utility>

#include "sandbox/runner/container_handle.h"
#include "sandbox/service/egress_gateways.h"
#include "sandbox/service/session_record.h"

namespace sandbox::service {
namespace {

// A warm session container (no session yet) has nothing worth keeping: its harness's watchdog
// is at most this, whatever the restart grace (the session op raises it to the grace).
constexpr auto kWarmWatchdogMax = std::chrono::seconds(30);

}  // namespace

runner::SandboxSetup SetupFor(const config::Config& config, const config::PoolConfig& pool,
                              PoolPurpose purpose, const ServiceOptions& options) {
  runner::SandboxSetup setup;
  setup.pool = pool;
  setup.output = config.output;
  setup.container_seccomp_json = options.container_seccomp_json;
  setup.run_filter_bpf = options.run_filter_bpf;
  setup.instance_id = config.instance_id;
  setup.replica = config.server.replica;
  setup.extra_labels = options.container_labels;
  setup.input = options.input;
  if (purpose == PoolPurpose::kSessions) {
    setup.session = true;
    setup.session_file_bytes = config.sessions.max_file_bytes;
    // With a restart grace, containers outlive this server up to their watchdog (the session
    // op raises a warm container's to the grace), and health checks keep warm ones alive.
    const auto grace =
        std::chrono::duration_cast<std::chrono::milliseconds>(config.sessions.restart_grace);
    setup.watchdog = std::min<std::chrono::milliseconds>(grace, kWarmWatchdogMax);
  }
  return setup;
}

pool::PoolOptions PoolOptionsFor(const config::Config& config, const config::PoolConfig& pool,
                                 PoolPurpose purpose, const runner::SandboxSetup& setup,
                                 const ServiceOptions& options) {
  pool::PoolOptions po = pool::PoolOptionsFromConfig(pool);
  if (purpose == PoolPurpose::kSessions) {
    if (setup.watchdog.count() > 0) {
      po.health_check_interval = std::min(po.health_check_interval, setup.watchdog / 3);
    }
    po.name = pool.name + "/sessions";
    // A session's container is its own: lent once, destroyed when the session ends.
    po.mode = config::PoolMode::kFresh;
    po.max_total = std::max(1, config.sessions.max_total);
    po.min_idle =
        pool.name == config.default_pool ? std::min(config.sessions.warm, po.max_total) : 0;
    po.max_concurrent_starts = std::min(pool.max_concurrent_starts, po.max_total);
    // Creating a session may wait for a cold start (imports and a warm-up plot: seconds).
    po.acquire_timeout =
        std::max<std::chrono::milliseconds>(pool.acquire_timeout, std::chrono::seconds(60));
  }
  if (options.pool_hooks) po.hooks = options.pool_hooks(po.name);
  return po;
}

PoolSet BuildPools(const config::Config& config, PoolPurpose purpose, const ServiceOptions& options,
                   const MakerFactory& make, const std::shared_ptr<spdlog::logger>& logger) {
  PoolSet pools;
  for (const auto& pc : config.pools) {
    runner::SandboxSetup setup = SetupFor(config, pc, purpose, options);
    pool::PoolOptions po = PoolOptionsFor(config, pc, purpose, setup, options);
    PoolEntry entry;
    entry.config = &pc;
    entry.maker = make(std::move(setup));
    entry.pool = std::make_unique<SandboxPool>(std::move(po), *entry.maker, logger);
    pools.emplace(pc.name, std::move(entry));
  }
  return pools;
}

int RetireIdleOn(PoolSet& pools, const std::string& engine, EngineExit exit, std::string_view why) {
  int retired = 0;
  for (auto& [name, entry] : pools) {
    retired += entry.pool->RetireIf(
        [&engine, exit](runner::Sandbox& sandbox) {
          if (sandbox.engine() != engine) return false;
          if (exit == EngineExit::kLeave) sandbox.Leave();
          return true;
        },
        why);
  }
  return retired;
}

HarnessSandboxMaker::HarnessSandboxMaker(const engine::ContainerEngine& engine,
                                         runner::SandboxSetup setup,
                                         std::shared_ptr<spdlog::logger> logger,
                                         runner::EgressLink* egress)
    : engine_(engine), logger_(std::move(logger)), egress_(egress) {
  std::lock_guard lock(setups_mu_);
  current_ = AddSetups(std::move(setup));
}

MakerFactory HarnessSandboxMaker::On(const engine::ContainerEngine& engine,
                                     const std::shared_ptr<spdlog::logger>& logger,
                                     EgressGateways* egress) {
  return [&engine, logger, egress](runner::SandboxSetup setup) -> std::unique_ptr<SandboxMaker> {
    runner::EgressLink* link = egress != nullptr ? egress->For(engine, setup.pool) : nullptr;
    return std::make_unique<HarnessSandboxMaker>(engine, std::move(setup), logger, link);
  };
}

HarnessSandboxMaker::Setups HarnessSandboxMaker::AddSetups(runner::SandboxSetup setup) {
  Setups added;
  const auto& pool = setup.pool;
  if (pool.skip_preload_when_queued && !setup.session &&
      (!pool.preload.empty() || pool.warm_plot)) {
    auto lean = std::make_unique<runner::SandboxSetup>(setup);
    lean->pool.preload.clear();
    lean->pool.warm_plot = false;
    lean->lean = true;
    added.lean = lean.get();
    all_setups_.push_back(std::move(lean));
  }
  auto full = std::make_unique<const runner::SandboxSetup>(std::move(setup));
  added.full = full.get();
  all_setups_.push_back(std::move(full));
  return added;
}

const runner::SandboxSetup& HarnessSandboxMaker::setup() const {
  std::lock_guard lock(setups_mu_);
  return *current_.full;
}

config::Limits HarnessSandboxMaker::limits() const {
  std::lock_guard lock(setups_mu_);
  return current_.full->pool.limits;
}

void HarnessSandboxMaker::SetLimits(const config::Limits& limits) {
  std::lock_guard lock(setups_mu_);
  runner::SandboxSetup next = *current_.full;
  next.pool.limits = limits;
  current_ = AddSetups(std::move(next));
}

Result<std::unique_ptr<runner::Sandbox>> HarnessSandboxMaker::Create() {
  return CreateFor(pool::StartContext{});
}

Result<std::unique_ptr<runner::Sandbox>> HarnessSandboxMaker::CreateFor(
    const pool::StartContext& context) {
  Setups setups;
  {
    std::lock_guard lock(setups_mu_);
    setups = current_;
  }
  const bool lean = context.behind_demand && setups.lean != nullptr;
  if (lean) {
    logger_->debug("pool '{}': behind demand; starting a container without the preload",
                   setups.full->pool.name);
  }
  // A session container that may outlive this server is made for the id its session will
  // have, so its label can carry that id's key from the start (see session_record.h).
  runner::StartExtras extras;
  if (setups.full->session && setups.full->watchdog.count() > 0) {
    extras.session_id = NewSessionId(setups.full->replica);
    extras.labels[std::string(kSessionKeyLabel)] = SessionKey(extras.session_id);
  }
  extras.egress = egress_;
  auto sandbox = runner::HarnessSandbox::Start(engine_, lean ? *setups.lean : *setups.full, logger_,
                                               &cancel_starts_, std::move(extras));
  if (!sandbox.ok()) return sandbox.error();
  NoteVersion(**sandbox);
  return std::unique_ptr<runner::Sandbox>(std::move(*sandbox));
}

void HarnessSandboxMaker::NoteVersion(const runner::HarnessSandbox& sandbox) {
  const auto& ready = sandbox.ready_info();
  auto it = ready.find("python");
  if (it == ready.end() || !it->is_string()) return;
  // "3.11.2" -> "3.11": Snekbox's interpreter paths name major.minor.
  const std::string full = it->get<std::string>();
  const auto first = full.find('.');
  const auto second = first == std::string::npos ? first : full.find('.', first + 1);
  std::lock_guard lock(version_mu_);
  python_version_ = full.substr(0, second);
}

Result<std::unique_ptr<runner::Sandbox>> HarnessSandboxMaker::StartForSession(
    const std::string& session_id) {
  runner::StartExtras extras;
  extras.session_id = session_id;
  extras.labels[std::string(kSessionKeyLabel)] = SessionKey(session_id);
  extras.egress = egress_;
  auto sandbox =
      runner::HarnessSandbox::Start(engine_, setup(), logger_, &cancel_starts_, std::move(extras));
  if (!sandbox.ok()) return sandbox.error();
  return std::unique_ptr<runner::Sandbox>(std::move(*sandbox));
}

Result<std::unique_ptr<runner::Sandbox>> HarnessSandboxMaker::Adopt(
    const engine::Listed& container) {
  auto sandbox = runner::HarnessSandbox::Adopt(engine_, setup(), container.id, logger_);
  if (!sandbox.ok()) return sandbox.error();
  return std::unique_ptr<runner::Sandbox>(std::move(*sandbox));
}

void HarnessSandboxMaker::Remove(const engine::Listed& container) {
  runner::ContainerHandle(&engine_, container.id, logger_).Remove();
}

std::string HarnessSandboxMaker::python_version() const {
  std::lock_guard lock(version_mu_);
  return python_version_;
}

}  // namespace sandbox::service
