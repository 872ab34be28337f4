// ContainerEngine: what the server asks of one container engine, in the server's verbs rather
// than an engine's (docs/scale-out.md, section 2), so that Docker (create, attach, start) and
// Kubernetes (a pod, then an attach once it runs) both fit behind it. The runner, the service
// and the server's probes see engines only through it; docker::DockerEngine is the one
// implementation today, and main is the one place that makes it.
//
// Errors: kNotFound (no such sandbox or image), kUnavailable (the engine cannot be reached),
// kTimeout (the deadline passed), kUnsupported (the engine cannot do this, an answer: see
// Narrow), kCancelled (Launch's cancel flag), or the engine's own error (kEngine, kConflict,
// kProtocol) with its text.
//
// Thread-safety: an engine is immutable once made and every method may be called from any
// thread. An AttachedStream has its own contract (stream.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/engine/deadline.h"
#include "sandbox/engine/stream.h"

namespace sandbox::engine {

using Labels = std::map<std::string, std::string>;

// The message of a Launch given up because its cancel flag was set (kCancelled).
inline constexpr std::string_view kLaunchCancelled = "the sandbox start was cancelled";

struct Ulimit {
  std::string name;  // "nproc", "nofile", "fsize", "core"
  std::int64_t soft = 0;
  std::int64_t hard = 0;
};

// A writable in-memory filesystem, mounted nosuid and nodev.
struct TmpfsMount {
  std::string path;
  std::int64_t size_bytes = 0;
  int mode = 01777;
};

// The network a sandbox of a pool with an egress policy joins (docs/network.md): an internal
// network made by the server (CreateNetwork) whose only way out is the pool's egress proxy.
// Empty `name`: no network at all, the default.
struct SandboxNetwork {
  std::string name;
  std::vector<std::string> dns;  // the resolvers (the proxy's null resolver)
  std::vector<std::string> env;  // "KEY=value": the proxy settings the code's clients read
};

// One sandbox to launch, engine-neutral: what varies by pool and by start (runner's
// BuildSandboxSpec decides it). What never varies is each engine's to apply, in one place per
// engine (docker::ToContainerSpec), so no path can forget it: no network (unless `network`
// names the pool's internal egress network), a read-only root
// filesystem, no mounts of the host, every capability dropped, no-new-privileges, the seccomp
// profile below, an init process as pid 1, private IPC, no swap, stdin, stdout and stderr
// attached without a TTY, and the sandbox removed by the engine once it exits.
struct SandboxSpec {
  std::string image;
  std::vector<std::string> cmd;  // run instead of the image's entrypoint and command
  std::string user;              // "uid:gid", numeric
  std::string working_dir;
  Labels labels;
  // stdin stays open when the server's attach closes, so a later server can attach again (a
  // session that may outlive its server); false: the sandbox then sees end of input.
  bool keep_stdin_open = false;
  std::int64_t memory_bytes = 0;  // hard limit; no swap
  double cpus = 0;                // CPU share; 0: unlimited
  std::int64_t pids_limit = 0;
  std::int64_t shm_bytes = 0;  // /dev/shm
  std::vector<TmpfsMount> tmpfs;
  std::vector<Ulimit> ulimits;
  std::string seccomp_profile_json;  // the container's seccomp profile, as JSON text
  std::string runtime;               // "": the engine's default; "runsc": gVisor
  SandboxNetwork network;            // default: none
};

// An internal network for the sandboxes of one pool with an egress policy (docs/network.md).
// What never varies is the engine's to apply: no route out (internal), sandboxes on it cannot
// reach each other (inter-container traffic off), no IPv6.
struct NetworkSpec {
  std::string name;
  std::string bridge;   // the host's interface name (the host firewall matches its prefix)
  std::string subnet;   // "10.213.4.0/24"
  std::string gateway;  // "10.213.4.1"
  Labels labels;
};

// A network as ListNetworks finds it.
struct ListedNetwork {
  std::string id;
  std::string name;
  Labels labels;
  int containers = 0;  // attached now
};

// A helper container the server runs beside the sandboxes (the egress proxy): not a sandbox,
// but held to the same hardening where it applies: a read-only root, every capability dropped,
// no-new-privileges, the engine's default seccomp profile, an init process, stdin, stdout and
// stderr attached (it ends when the server's attach closes), removed once it exits.
struct ServiceSpec {
  struct Attachment {
    std::string network;
    std::string ipv4;  // "": the engine picks
  };
  std::string image;
  std::vector<std::string> cmd;
  std::string user;  // "uid:gid"
  Labels labels;
  std::vector<Attachment> networks;  // the first is the container's own; never empty
  std::map<std::string, std::string> sysctls;
  std::int64_t memory_bytes = 0;
  std::int64_t pids_limit = 0;
};

// New limits for a running sandbox (Narrow); a field left 0 is not changed.
struct ResourceUpdate {
  std::int64_t memory_bytes = 0;  // also the memory+swap limit: no swap
  std::int64_t pids_limit = 0;
};

// What Inspect says of a sandbox that exists (one that does not is kNotFound).
struct SandboxState {
  std::string status;    // the engine's word, for messages: "running", "paused", "exited", ...
  bool running = false;  // its processes exist (also while paused)
  bool paused = false;   // frozen: its processes exist but do not run
  std::int64_t exit_code = 0;  // when it has exited
  // When it last started, in the engine's own notation; a restart changes it (owner.h).
  std::string started_at;
  std::map<std::string, std::string> addresses;  // IPv4 address by network name
};

// One sandbox as List finds it.
struct Listed {
  std::string id;
  // "created", "running", "paused", "restarting", "exited" or "dead" (Docker's words; another
  // engine maps its own to them).
  std::string state;
  std::int64_t created = 0;  // unix seconds; 0: unknown
  Labels labels;
  std::string engine;  // the name of the engine that listed it (ContainerEngine::name())
};

// What CheckImage finds of an image the engine has.
struct ImageFacts {
  std::string id;
  Labels labels;
};

// A launched sandbox: its id and the stream attached to its stdio before its process started,
// so none of its output is missed.
struct Launched {
  std::string id;
  std::unique_ptr<AttachedStream> stream;
};

class ContainerEngine {
 public:
  virtual ~ContainerEngine() = default;
  ContainerEngine() = default;
  ContainerEngine(const ContainerEngine&) = delete;
  ContainerEngine& operator=(const ContainerEngine&) = delete;

  // The engine's configured name ("local" for the one engine of docker.host): a metric label,
  // bounded by the configuration.
  virtual const std::string& name() const = 0;
  // What the engine is, for messages: "Docker" ("the Docker engine does not answer").
  virtual std::string_view kind() const = 0;
  // The deadline of a call whose caller has no bound of its own (docker.call_timeout_ms).
  virtual std::chrono::milliseconds call_timeout() const = 0;
  Deadline DefaultDeadline() const { return DeadlineAfter(call_timeout()); }

  // Whether the engine answers.
  virtual Status Ping(Deadline deadline) const = 0;
  // The image's id and labels; kNotFound when the engine does not have it.
  virtual Result<ImageFacts> CheckImage(const std::string& image, Deadline deadline) const = 0;
  // Creates the sandbox, attaches to its stdin, stdout and stderr and starts it, in the order
  // the engine needs (all output reaches the stream). When `cancel` (optional, any thread)
  // becomes true, gives up after the step in progress (kCancelled, kLaunchCancelled). On any
  // failure the sandbox, if made, is removed again: nothing is left behind.
  virtual Result<Launched> Launch(const SandboxSpec& spec, Deadline deadline,
                                  const std::atomic<bool>* cancel) const = 0;
  // Attaches to a running sandbox's stdio again (one launched with keep_stdin_open by an
  // earlier server): only what it says from now on.
  virtual Result<std::unique_ptr<AttachedStream>> Reattach(const std::string& id,
                                                           Deadline deadline) const = 0;
  // Lowers a running sandbox's limits. kUnsupported when the engine cannot: its creation
  // limits stay.
  virtual Status Narrow(const std::string& id, const ResourceUpdate& update,
                        Deadline deadline) const = 0;
  // kNotFound when the sandbox no longer exists.
  virtual Result<SandboxState> Inspect(const std::string& id, Deadline deadline) const = 0;
  // Kills the sandbox's processes at once; it stays until removed. One that is not running
  // counts as killed.
  virtual Status Kill(const std::string& id, Deadline deadline) const = 0;
  // Kills and removes the sandbox; returns once the engine no longer lists it. kNotFound (it
  // was already gone) is success.
  virtual Status Remove(const std::string& id, Deadline deadline) const = 0;
  // Every sandbox, running or not, that carries all of `all_of` (label = value).
  virtual Result<std::vector<Listed>> List(const Labels& all_of, Deadline deadline) const = 0;

  // Networks and helper containers, for pools with an egress policy. An engine that cannot:
  // kUnsupported (such pools then cannot run on it).
  // kConflict when the name is taken or the subnet overlaps another network's.
  virtual Status CreateNetwork(const NetworkSpec& spec, Deadline deadline) const;
  // kNotFound (already gone) is success; kConflict while containers are attached.
  virtual Status RemoveNetwork(const std::string& name, Deadline deadline) const;
  virtual Result<std::vector<ListedNetwork>> ListNetworks(const Labels& all_of,
                                                          Deadline deadline) const;
  // Creates the container, joins its networks, attaches to its stdio and starts it; on any
  // failure it is removed again.
  virtual Result<Launched> LaunchService(const ServiceSpec& spec, Deadline deadline) const;
};

// The engines a server runs on, in configuration order (main owns them; they outlive every
// user of the list).
using EngineList = std::vector<const ContainerEngine*>;

// The engine of that name in `engines`; null when there is none.
inline const ContainerEngine* FindEngine(const EngineList& engines, std::string_view name) {
  for (const auto* engine : engines) {
    if (engine->name() == name) return engine;
  }
  return nullptr;
}

}  // namespace sandbox::engine
