// RunServer (sandbox/server/server.h): builds every component from the validated configuration
// and hands them to the front end that serves them (stdio or HTTP). Everything is constructed
// here and passed down; nothing is global, and the logic lives in the files named by the includes.
#include "sandbox/server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "egress_setup.h"
#include "engines.h"
#include "front_end.h"
#include "mcp_setup.h"
#include "sandbox/admin/pool_tuner.h"
#include "sandbox/config/config.h"
#include "sandbox/core/byte_budget.h"
#include "sandbox/core/error.h"
#include "sandbox/core/human_bytes.h"
#include "sandbox/core/machine_memory.h"
#include "sandbox/core/memory_trim.h"
#include "sandbox/core/result.h"
#include "sandbox/docker/client.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/mcp/task_store.h"
#include "sandbox/metrics/metrics.h"
#include "sandbox/policy/container_profile.h"
#include "sandbox/policy/run_filter.h"
#include "sandbox/service/egress_gateways.h"
#include "sandbox/service/engine.h"
#include "sandbox/service/owner.h"
#include "sandbox/service/sandbox_service.h"
#include "sandbox/service/session_manager.h"
#include "served_runs.h"
#include "signals.h"
#include "startup.h"

namespace sandbox::server {
namespace {

// What the configuration can say but this server does not do yet: Podman's seccomp profile
// path (docs/scale-out.md section 9, step 11). The one place to remove when Podman is served.
Status RefuseUnservedEngines(const config::Config& config) {
  const auto engines = config::EffectiveEngines(config.docker);
  for (std::size_t i = 0; i < engines.size(); ++i) {
    if (!engines[i].seccomp_profile_path.empty()) {
      return Error(ErrorCode::kUnsupported, "docker.engines[" + std::to_string(i) +
                                                "].seccomp_profile_path: Podman engines are not "
                                                "served yet");
    }
  }
  return OkStatus();
}

// Every engine a pool with a network policy runs on must have the egress proxy's image.
Status CheckEgressImage(const config::Config& config, const engine::EngineList& engines) {
  for (const auto& pool : config.pools) {
    if (pool.network.mode == config::NetworkPolicy::Mode::kNone) continue;
    for (const auto* each : engines) {
      const auto names = config::PoolEngineNames(pool, config.docker);
      if (std::find(names.begin(), names.end(), each->name()) == names.end()) continue;
      auto image = each->CheckImage(config.egress.image, each->DefaultDeadline());
      if (image.ok()) continue;
      if (image.error().code() == ErrorCode::kNotFound) {
        return Error(ErrorCode::kNotFound,
                     "pool '" + pool.name + "' has a network policy, but engine " + each->name() +
                         " has no image " + config.egress.image +
                         " (the egress proxy's): build it with images/egress/build.sh");
      }
      return image.error().WithContext("engine " + each->name());
    }
  }
  return OkStatus();
}

int Run(const Invocation& invocation, const Extensions& extensions) {
  const config::Config& config = invocation.config;
  auto logger = MakeLogger(config);
  // What the host lets this process run: the thread budget of Validate() and the admin API.
  const config::HostLimits host = config::ReadHostLimits();
  if (auto valid = config::Validate(config, host); !valid.ok()) return Fail(logger, valid.error());
  if (auto served = RefuseUnservedEngines(config); !served.ok()) {
    return Fail(logger, served.error());
  }
  // Before any other thread exists, so that none of them is interrupted by a signal.
  const SignalWaiter signals;

  auto profile =
      sandbox::policy::ContainerProfile::LoadFile(ResolvePolicy(config.policy.container_seccomp));
  if (!profile.ok()) return Fail(logger, profile.error());
  auto run_filter = sandbox::policy::RunFilter::LoadFile(ResolvePolicy(config.policy.run_seccomp));
  if (!run_filter.ok()) return Fail(logger, run_filter.error());
  // Replicas behind a balancer share the key, so a multi round-trip call may land on any of them.
  auto request_state_key = LoadRequestStateKey(config);
  if (!request_state_key.ok()) return Fail(logger, request_state_key.error());
  if (!config.server.replica.empty()) {
    logger->info("replica {}: every session and task id this server makes starts with \"{}-\"",
                 config.server.replica, config.server.replica);
  }
  if (!config.server.replica.empty() && request_state_key->empty()) {
    logger->warn(
        "server.replica is \"{}\" but server.request_state_key_file is not set: a 2026-07-28 "
        "multi round-trip call balanced to another replica fails there (its requestState was "
        "sealed with this process's random key); give every replica the same key file",
        config.server.replica);
  }

  sandbox::docker::CurlGlobal curl;
  // Every metric is recorded here (no global registry); /metrics renders it.
  sandbox::metrics::Metrics metrics(sandbox::metrics::MetricsOptions{SANDBOX_VERSION});
  // Everything below reaches the engines through the seam only (engine/container_engine.h).
  auto engines = ConnectedEngines::Connect(config, curl, metrics, logger);
  if (!engines.ok()) return Fail(logger, engines.error());
  const sandbox::engine::EngineList& engine_list = (*engines)->list();

  // Every container is labelled with this process as its owner; at start-up only containers
  // of the instance whose owner is provably gone are removed (a live server's are kept).
  auto self = sandbox::service::DetectOwner((*engines)->home());
  if (!self.ok()) return Fail(logger, self.error());
  logger->debug("owner label of this server's containers: {}",
                sandbox::service::FormatOwner(*self));
  // Every engine is swept; the session containers of all of them are adopted below.
  std::vector<sandbox::engine::Listed> left_sessions;
  for (const auto* engine : engine_list) {
    sandbox::service::SweepOptions sweep;
    sweep.instance_id = config.instance_id;
    sweep.self = *self;
    sweep.engine_local = (*engines)->IsLocal(*engine);
    sweep.unlabelled_max_life = sandbox::service::LeftoverMaxLife(config);
    // Session containers of an earlier run are adopted below rather than removed
    // (docs/architecture.md, "Upgrades keep sessions").
    sweep.keep_sessions = config.sessions.enabled && config.sessions.restart_grace.count() > 0;
    auto leftovers = sandbox::service::SweepLeftovers(
        *engine, sweep, sandbox::service::SystemOwnerProbe(*engine), logger);
    if (!leftovers.ok()) {
      return Fail(logger, leftovers.error().WithContext("engine " + engine->name()));
    }
    left_sessions.insert(left_sessions.end(), leftovers->left_sessions.begin(),
                         leftovers->left_sessions.end());
  }

  sandbox::service::ServiceOptions service_options;
  service_options.container_labels[std::string(sandbox::service::kOwnerLabel)] =
      sandbox::service::FormatOwner(*self);
  // The proxies and networks of pools with a network policy (docs/network.md); they outlive
  // the engine below, whose sandboxes hold their links.
  auto egress_options = EgressOptionsOf(config, service_options.container_labels, metrics, logger);
  if (!egress_options.ok()) return Fail(logger, egress_options.error());
  sandbox::service::EgressGateways egress(std::move(*egress_options), logger);
  if (auto checked = CheckEgressImage(config, engine_list); !checked.ok()) {
    return Fail(logger, checked.error());
  }
  for (const auto* each : engine_list) egress.SweepLeftovers(*each);
  service_options.egress = &egress;
  service_options.container_seccomp_json = profile->compact_json();
  service_options.run_filter_bpf = run_filter->bpf();
  // Several engines: each is watched (pings); one that goes down takes no new sandboxes and its
  // sandboxes are dropped, and it is taken back once it answers and its leftovers are gone.
  sandbox::engine::EngineHealth health(engine_list, sandbox::engine::HealthOptions{});
  if (engine_list.size() > 1) service_options.health = &health;
  service_options.pool_hooks = [&metrics](const std::string& pool) {
    sandbox::pool::PoolHooks hooks;
    hooks.start_finished = [&metrics, pool](bool ok, std::chrono::microseconds took) {
      metrics.RecordContainerStart(pool, ok, took);
    };
    hooks.acquire_finished = [&metrics, pool](bool ok, std::chrono::microseconds waited) {
      metrics.RecordAcquire(pool, ok, waited);
    };
    return hooks;
  };
  // The run service, the session manager (null while sessions.enabled is false: no session
  // tool, resource or route is offered) and the adoption of an earlier server's sessions.
  auto engine =
      sandbox::service::Engine::Start(config, engine_list, service_options, left_sessions, logger);
  if (!engine.ok()) return Fail(logger, engine.error());
  sandbox::service::SandboxService& service = (*engine)->service();
  sandbox::service::SessionManager* session_manager = (*engine)->sessions();
  if (service_options.health != nullptr) {
    health.AddListener([&service, session_manager](const sandbox::engine::ContainerEngine& changed,
                                                   bool up, const std::string& why) {
      if (!up && session_manager != nullptr) session_manager->DropWarmOn(changed.name());
      return service.EngineChanged(changed, up, why);
    });
    health.Start();
  }
  sandbox::exec::SessionService* sessions = session_manager;
  // Sessions end (their containers go) before the pools they came from stop; with
  // sessions.restart_grace_s their containers are left running for the next server instead.
  const char* stopped_line =
      session_manager != nullptr && config.sessions.restart_grace.count() > 0
          ? "stopped; all sandbox containers removed but those of sessions, left running for the "
            "next server "
            "(sessions.restart_grace_s)"
          : "stopped; all sandbox containers removed";
  auto shutdown_engine = [&] {
    health.Stop();  // its listener calls the service
    (*engine)->Shutdown();
    egress.Stop();  // after the sandboxes: a network goes once nothing is attached
  };

  // Every byte held for a client comes out of this one budget (docs/memory-budget.md).
  const std::int64_t machine_bytes = MachineMemoryBytes();
  ByteBudget inflight(config::InflightBytes(config, machine_bytes));
  logger->info("in-flight byte budget {} (memory.inflight_bytes; machine memory {})",
               HumanBytes(inflight.capacity()), HumanBytes(machine_bytes));
  // Freed result buffers go back to the kernel, so one large result leaves no lasting growth.
  MemoryTrimmer trimmer;
  ServedRuns served(config, service, sessions, metrics, logger);
  // Tasks of the MCP tasks extension (2026-07-28): runs that outlive their request. Shut down
  // (their runs cancelled) before the engine stops and before the dispatcher's tools go.
  mcp::TaskStore tasks(TaskOptionsOf(config), logger);
  mcp::Dispatcher dispatcher =
      MakeDispatcher(config, served.runs(), served.sessions(), extensions, &tasks, inflight,
                     std::move(*request_state_key), logger);
  // Live tuning of the pools: the admin API and SIGHUP both change them through the tuner.
  admin::PoolTuner tuner(service, admin::PoolBounds{config, host}, &metrics, logger);
  const FrontEnd front{.config = config,
                       .dispatcher = dispatcher,
                       .tuner = tuner,
                       .metrics = metrics,
                       .inflight = inflight,
                       .load_config = [&invocation] { return invocation.Reload(); },
                       .signals = signals,
                       .logger = logger};
  const int code = config.server.stdio
                       ? ServeStdio(front)
                       : ServeHttp(front, HttpSources{served.runs(), served.sessions(), &service,
                                                      session_manager, &service, &tasks});
  tasks.Shutdown();
  if (code != 0) {
    health.Stop();
    return code;
  }
  shutdown_engine();
  logger->info("{}", stopped_line);
  return 0;
}

}  // namespace

int RunServer(int argc, char** argv, const Extensions& extensions) {
  // Few arenas and a fixed mmap threshold: large answers go back to the kernel when freed, and
  // the rest is trimmed (MemoryTrimmer), so RSS at rest stays flat (docs/memory-budget.md).
  MemoryTrimmer::ConfigureAllocator(AllocatorOptions{});
  Invocation invocation;
  if (auto done = ParseInvocation(argc, argv, invocation)) return *done;
  return Run(invocation, extensions);
}

}  // namespace sandbox::server
