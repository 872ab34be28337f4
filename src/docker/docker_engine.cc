#include "sandbox/docker/docker_engine.h"

#include <sstream>
#include <thread>
#include <utility>

namespace sandbox::docker {
namespace {

std::string ShortId(const std::string& id) { return id.substr(0, 12); }

std::string Octal(int mode) {
  std::ostringstream out;
  out << std::oct << mode;
  return out.str();
}

}  // namespace

ContainerSpec ToContainerSpec(const engine::SandboxSpec& sandbox) {
  ContainerSpec spec;
  spec.image = sandbox.image;
  spec.cmd = sandbox.cmd;
  spec.entrypoint = std::vector<std::string>{};  // the image's entrypoint never runs
  spec.user = sandbox.user;
  spec.working_dir = sandbox.working_dir;
  spec.open_stdin = true;
  spec.attach_stdin = true;
  spec.attach_stdout = true;
  spec.attach_stderr = true;
  // The harness sees EOF (and exits) when the server detaches. A sandbox meant to outlive its
  // server keeps stdin open instead, so a later server can attach again (the engine lets a new
  // attach write to the same stdin).
  spec.stdin_once = !sandbox.keep_stdin_open;
  spec.labels = sandbox.labels;

  auto& hc = spec.host_config;
  if (sandbox.network.name.empty()) {
    spec.network_disabled = true;
    hc.network_mode = "none";
  } else {
    // The pool's internal network, whose only way out is its egress proxy (docs/network.md).
    hc.network_mode = sandbox.network.name;
    spec.endpoint = NetworkEndpoint{sandbox.network.name, ""};
    hc.dns = sandbox.network.dns;
    // A refused name fails at once rather than after the resolver's retries.
    hc.dns_options = {"timeout:1", "attempts:1"};
    spec.env = sandbox.network.env;
  }
  hc.readonly_rootfs = true;
  hc.cap_drop = {"ALL"};
  // The engine takes the profile's text; the CLI's path form is read client-side.
  hc.security_opt = {"no-new-privileges:true", "seccomp=" + sandbox.seccomp_profile_json};
  hc.init = true;
  hc.ipc_mode = "private";
  hc.memory = sandbox.memory_bytes;
  hc.memory_swap = hc.memory;  // swap equal to memory means none
  hc.nano_cpus = static_cast<std::int64_t>(sandbox.cpus * 1e9);
  hc.pids_limit = sandbox.pids_limit;
  hc.shm_size = sandbox.shm_bytes;
  for (const auto& mount : sandbox.tmpfs) {
    hc.tmpfs[mount.path] =
        "rw,nosuid,nodev,size=" + std::to_string(mount.size_bytes) + ",mode=" + Octal(mount.mode);
  }
  for (const auto& limit : sandbox.ulimits) {
    hc.ulimits.push_back(Ulimit{limit.name, limit.soft, limit.hard});
  }
  if (!sandbox.runtime.empty()) hc.runtime = sandbox.runtime;
  // If the server dies, the attach connection closes, the harness sees end of input and exits,
  // and the engine removes the container by itself: no leftovers even before crash recovery.
  spec.extra = {{"HostConfig", {{"AutoRemove", true}}}};
  return spec;
}

nlohmann::json ToNetworkBody(const engine::NetworkSpec& network) {
  return {
      {"Name", network.name},
      {"CheckDuplicate", true},
      {"Driver", "bridge"},
      {"Internal", true},
      {"EnableIPv6", false},
      {"Attachable", false},
      {"Labels", network.labels},
      {"IPAM",
       {{"Driver", "default"},
        {"Config",
         nlohmann::json::array({{{"Subnet", network.subnet}, {"Gateway", network.gateway}}})}}},
      {"Options",
       {{"com.docker.network.bridge.name", network.bridge},
        {"com.docker.network.bridge.enable_icc", "false"},
        {"com.docker.network.bridge.enable_ip_masquerade", "false"}}},
  };
}

ContainerSpec ToServiceContainerSpec(const engine::ServiceSpec& service) {
  ContainerSpec spec;
  spec.image = service.image;
  spec.cmd = service.cmd;
  spec.entrypoint = std::vector<std::string>{};
  spec.user = service.user;
  spec.labels = service.labels;
  spec.open_stdin = true;
  spec.attach_stdin = true;
  spec.attach_stdout = true;
  spec.attach_stderr = true;
  spec.stdin_once = true;  // it ends when the server's attach closes
  auto& hc = spec.host_config;
  if (!service.networks.empty()) {
    hc.network_mode = service.networks.front().network;
    spec.endpoint =
        NetworkEndpoint{service.networks.front().network, service.networks.front().ipv4};
  }
  hc.readonly_rootfs = true;
  hc.cap_drop = {"ALL"};
  hc.security_opt = {"no-new-privileges:true"};
  hc.init = true;
  hc.ipc_mode = "private";
  if (service.memory_bytes > 0) {
    hc.memory = service.memory_bytes;
    hc.memory_swap = service.memory_bytes;
  }
  if (service.pids_limit > 0) hc.pids_limit = service.pids_limit;
  hc.sysctls = service.sysctls;
  spec.extra = {{"HostConfig", {{"AutoRemove", true}}}};
  return spec;
}

DockerEngine::DockerEngine(std::string name, const Client& client,
                           std::shared_ptr<spdlog::logger> logger)
    : name_(std::move(name)), client_(client), logger_(std::move(logger)) {}

std::chrono::milliseconds DockerEngine::call_timeout() const {
  return client_.options().call_timeout;
}

Status DockerEngine::Ping(engine::Deadline deadline) const {
  auto ping = client_.Ping(CallOptions::Until(deadline));
  if (!ping.ok()) return ping.error();
  return OkStatus();
}

Result<engine::ImageFacts> DockerEngine::CheckImage(const std::string& image,
                                                    engine::Deadline deadline) const {
  auto info = client_.InspectImage(image, CallOptions::Until(deadline));
  if (!info.ok()) return info.error();
  return engine::ImageFacts{info->id, info->labels};
}

Result<engine::Launched> DockerEngine::Launch(const engine::SandboxSpec& spec,
                                              engine::Deadline deadline,
                                              const std::atomic<bool>* cancel) const {
  auto cancelled = [cancel] { return cancel != nullptr && cancel->load(); };
  const Error launch_cancelled(ErrorCode::kCancelled, std::string(engine::kLaunchCancelled));
  auto created = client_.CreateContainer(ToContainerSpec(spec), CallOptions::Until(deadline));
  if (!created.ok()) return created.error().WithContext("create sandbox container");
  const std::string id = created->id;
  // From here on every failure removes the container again.
  auto failed = [this, &id](const Error& error) -> Result<engine::Launched> {
    return RemoveAfterFailure(id, error);
  };
  if (cancelled()) return failed(launch_cancelled);

  AttachOptions attach;
  attach.attach_stdin = true;
  auto stream = client_.Attach(id, attach, CallOptions::Until(deadline));
  if (!stream.ok()) return failed(stream.error().WithContext("attach to sandbox container"));
  if (cancelled()) {
    stream->reset();
    return failed(launch_cancelled);
  }
  auto started = client_.StartContainer(id, CallOptions::Until(deadline));
  if (!started.ok()) {
    stream->reset();
    return failed(started.error().WithContext("start sandbox container"));
  }
  return engine::Launched{id, std::move(*stream)};
}

Result<std::unique_ptr<engine::AttachedStream>> DockerEngine::Reattach(
    const std::string& id, engine::Deadline deadline) const {
  AttachOptions attach;
  attach.attach_stdin = true;  // logs stay off: only what the harness says from now on
  auto stream = client_.Attach(id, attach, CallOptions::Until(deadline));
  if (!stream.ok()) return stream.error();
  return std::unique_ptr<engine::AttachedStream>(std::move(*stream));
}

Status DockerEngine::Narrow(const std::string& id, const engine::ResourceUpdate& update,
                            engine::Deadline deadline) const {
  ResourceUpdate docker_update;
  docker_update.memory_bytes = update.memory_bytes;
  docker_update.pids_limit = update.pids_limit;
  return client_.UpdateContainer(id, docker_update, CallOptions::Until(deadline));
}

Result<engine::SandboxState> DockerEngine::Inspect(const std::string& id,
                                                   engine::Deadline deadline) const {
  auto info = client_.InspectContainer(id, CallOptions::Until(deadline));
  if (!info.ok()) return info.error();
  engine::SandboxState state;
  state.status = info->state.status;
  state.running = info->state.running;
  state.paused = info->state.status == "paused";
  state.exit_code = info->state.exit_code;
  state.started_at = info->state.started_at;
  state.addresses = info->ip_addresses;
  return state;
}

Status DockerEngine::Kill(const std::string& id, engine::Deadline deadline) const {
  auto status = client_.KillContainer(id, "SIGKILL", CallOptions::Until(deadline));
  // 409 (not running) means it is already dead, which is what was asked.
  if (!status.ok() && status.error().code() == ErrorCode::kConflict) return OkStatus();
  return status;
}

Status DockerEngine::Remove(const std::string& id, engine::Deadline deadline) const {
  RemoveOptions options;
  options.force = true;
  options.volumes = true;
  auto status = client_.RemoveContainer(id, options, CallOptions::Until(deadline));
  // A container exiting at the moment of the force-remove makes dockerd answer 500 "Could not
  // kill running container ..., cannot remove - Container ... is not running" (seen once in a
  // 1-hour soak; the container then stayed behind, exited, until the next start-up's sweep).
  // The state settles within moments: ask again a few times.
  for (const auto delay : {std::chrono::milliseconds(100), std::chrono::milliseconds(400),
                           std::chrono::milliseconds(1500)}) {
    if (status.ok() || status.error().code() != ErrorCode::kEngine) break;
    if (logger_) {
      logger_->info("remove container {}: {}; retrying", ShortId(id), status.error().message());
    }
    std::this_thread::sleep_for(delay);
    status = client_.RemoveContainer(id, options, CallOptions::Until(deadline));
  }
  if (status.ok() || status.error().code() == ErrorCode::kNotFound) return OkStatus();
  if (status.error().code() != ErrorCode::kConflict) return status;
  // 409: the engine is already removing it (AutoRemove after exit). Wait until it is gone, so
  // "removed" means no longer listed (tests and shutdown count on it); 404 if the removal
  // finished in between.
  auto removed = client_.WaitContainer(id, WaitCondition::kRemoved, CallOptions::Until(deadline));
  if (removed.ok() || removed.error().code() == ErrorCode::kNotFound) return OkStatus();
  return removed.error();
}

Result<std::vector<engine::Listed>> DockerEngine::List(const engine::Labels& all_of,
                                                       engine::Deadline deadline) const {
  ListOptions list;
  list.all = true;
  auto& labels = list.filters["label"];
  for (const auto& [key, value] : all_of) labels.push_back(key + "=" + value);
  auto containers = client_.ListContainers(list, CallOptions::Until(deadline));
  if (!containers.ok()) return containers.error();
  std::vector<engine::Listed> out;
  out.reserve(containers->size());
  for (auto& c : *containers) {
    out.push_back(
        engine::Listed{std::move(c.id), std::move(c.state), c.created, std::move(c.labels), name_});
  }
  return out;
}

Error DockerEngine::RemoveAfterFailure(const std::string& id, const Error& error) const {
  auto removed = Remove(id, DeadlineAfter(kCleanupTimeout));
  if (!removed.ok() && logger_) {
    logger_->error("remove container {}: {}", ShortId(id), removed.error().ToString());
  }
  return error;
}

Status DockerEngine::CreateNetwork(const engine::NetworkSpec& spec,
                                   engine::Deadline deadline) const {
  auto created = client_.CreateNetwork(ToNetworkBody(spec), CallOptions::Until(deadline));
  if (!created.ok()) return created.error();
  return OkStatus();
}

Status DockerEngine::RemoveNetwork(const std::string& name, engine::Deadline deadline) const {
  auto status = client_.RemoveNetwork(name, CallOptions::Until(deadline));
  if (status.ok() || status.error().code() == ErrorCode::kNotFound) return OkStatus();
  // "has active endpoints" is a 403 (20.10) or 409: in use, not removed.
  if (status.error().http_status() == 403) {
    return Error(ErrorCode::kConflict, status.error().message());
  }
  return status;
}

Result<std::vector<engine::ListedNetwork>> DockerEngine::ListNetworks(
    const engine::Labels& all_of, engine::Deadline deadline) const {
  Filters filters;
  auto& labels = filters["label"];
  for (const auto& [key, value] : all_of) labels.push_back(key + "=" + value);
  auto listed = client_.ListNetworks(filters, CallOptions::Until(deadline));
  if (!listed.ok()) return listed.error();
  std::vector<engine::ListedNetwork> out;
  for (const auto& n : *listed) {
    // The list answer leaves Containers empty; the inspect answer has them.
    auto inspected = client_.InspectNetwork(n.id, CallOptions::Until(deadline));
    if (!inspected.ok() && inspected.error().code() == ErrorCode::kNotFound) continue;
    if (!inspected.ok()) return inspected.error();
    out.push_back({n.id, n.name, n.labels, inspected->containers});
  }
  return out;
}

Result<engine::Launched> DockerEngine::LaunchService(const engine::ServiceSpec& spec,
                                                     engine::Deadline deadline) const {
  if (spec.networks.empty()) {
    return Error(ErrorCode::kInvalidArgument, "a service container needs a network");
  }
  auto created =
      client_.CreateContainer(ToServiceContainerSpec(spec), CallOptions::Until(deadline));
  if (!created.ok()) return created.error().WithContext("create container from " + spec.image);
  const std::string id = created->id;
  auto failed = [this, &id](const Error& error) -> Result<engine::Launched> {
    return RemoveAfterFailure(id, error);
  };
  for (std::size_t i = 1; i < spec.networks.size(); ++i) {
    auto joined = client_.ConnectNetwork(spec.networks[i].network, id, spec.networks[i].ipv4,
                                         CallOptions::Until(deadline));
    if (!joined.ok()) return failed(joined.error());
  }
  AttachOptions attach;
  attach.attach_stdin = true;
  auto stream = client_.Attach(id, attach, CallOptions::Until(deadline));
  if (!stream.ok()) return failed(stream.error().WithContext("attach to " + ShortId(id)));
  auto started = client_.StartContainer(id, CallOptions::Until(deadline));
  if (!started.ok()) {
    stream->reset();
    return failed(started.error().WithContext("start " + ShortId(id)));
  }
  return engine::Launched{id, std::move(*stream)};
}

}  // namespace sandbox::docker
