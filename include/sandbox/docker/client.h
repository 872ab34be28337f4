// Client: typed calls to the Docker Engine API (system, images, containers, archives, attach,
// events), every one bounded by a deadline and reporting failures as sandbox::Error:
// kNotFound (404), kConflict (409), kEngine (other engine errors; http_status and Docker's own
// message kept), kUnavailable (engine unreachable), kTimeout (deadline passed).
//
// Thread-safety: a Client is immutable after Connect() and safe to share between threads; each
// call uses its own libcurl easy handle (ordinary calls borrow one from a small pool). Streams it
// returns (AttachedStream, EventStream) have their own contracts, see attach.h and events.h.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/docker/api_version.h"
#include "sandbox/docker/archive.h"
#include "sandbox/docker/attach.h"
#include "sandbox/docker/container_spec.h"
#include "sandbox/docker/deadline.h"
#include "sandbox/docker/events.h"
#include "sandbox/docker/models.h"
#include "sandbox/docker/query.h"
#include "sandbox/docker/transport.h"

namespace sandbox::docker {

// One finished call to the engine, for metrics: what was asked (an operation template such as
// "POST /containers/{id}/start", never an id or an image name's tag), the HTTP status (0 when no
// answer came: unreachable, deadline) and how long it took.
struct EngineCall {
  std::string operation;
  long status = 0;
  std::chrono::microseconds took{0};
};

// The operation template of a request target: the API version prefix and the query dropped,
// ids and names replaced by {id} / {name}. "/v1.41/containers/3f2a/start?x=1" is
// "/containers/{id}/start".
std::string OperationOf(std::string_view target);

struct ClientOptions {
  TransportOptions transport;  // default: unix:///var/run/docker.sock; see TransportOptionsFromEnv
  // Deadline of every call that is not given CallOptions. Long calls (wait) usually want more.
  std::chrono::milliseconds call_timeout{30'000};
  // Highest API version asked for; the engine's maximum may lower it. See api_version.h.
  ApiVersion max_api_version = kMaxTestedApiVersion;
  // Largest JSON answer accepted (kLimit beyond).
  std::size_t max_response_bytes = std::size_t{64} * 1024 * 1024;
  // Largest tar archive GetArchive accepts (kLimit beyond).
  std::size_t max_archive_bytes = std::size_t{256} * 1024 * 1024;
  // Called after every call (from the calling thread; must not call back into the client).
  // Empty: nothing is recorded.
  std::function<void(const EngineCall&)> on_call;
};

enum class WaitCondition {
  kNextExit,    // the next exit after the wait registered (issue it BEFORE start, else it can hang)
  kNotRunning,  // returns at once for a stopped container; on a created one, at once with 0
  kRemoved,     // after the container is removed
};

struct RemoveOptions {
  bool force = false;    // kill it first if running
  bool volumes = false;  // remove its anonymous volumes too
};

struct ResourceUpdate {
  std::int64_t memory_bytes = 0;  // 0: unchanged
  std::int64_t pids_limit = 0;    // 0: unchanged
};

struct ListOptions {
  bool all = true;  // include stopped containers
  Filters filters;  // e.g. {{"label", {"io.sandbox-mcp.managed=true"}}}
};

struct ArchiveData {
  std::string tar;  // the archive (see archive.h to read it)
  PathStat stat;    // of the requested path
};

class Client {
 public:
  // Pings the engine (unversioned /_ping), negotiates the API version, checks it against the
  // engine's minimum (unversioned /version) and returns a client whose calls all use /v<version>.
  // kUnavailable when no engine answers, kUnsupported when the engine is older than
  // kMinApiVersion or requires more than we speak. `curl` must outlive the client.
  static Result<std::unique_ptr<Client>> Connect(const CurlGlobal& curl, ClientOptions options = {},
                                                 const CallOptions& call = {});

  const ApiVersion& api_version() const { return version_; }
  const ClientOptions& options() const { return options_; }

  // -- system --
  Result<PingInfo> Ping(const CallOptions& call = {}) const;
  Result<VersionInfo> Version(const CallOptions& call = {}) const;
  Result<SystemInfo> Info(const CallOptions& call = {}) const;

  // -- images --
  // kNotFound ("No such image: <ref>") when the image is not present locally.
  Result<ImageInfo> InspectImage(std::string_view image, const CallOptions& call = {}) const;

  // -- containers --
  // kNotFound when the image is missing (the message names it), kConflict when the name is taken.
  Result<CreatedContainer> CreateContainer(const ContainerSpec& spec,
                                           const CallOptions& call = {}) const;
  // Already running (HTTP 304) counts as success.
  Status StartContainer(std::string_view id, const CallOptions& call = {}) const;
  // Blocks until the condition holds or the deadline passes (kTimeout).
  Result<WaitResult> WaitContainer(std::string_view id,
                                   WaitCondition condition = WaitCondition::kNotRunning,
                                   const CallOptions& call = {}) const;
  // kConflict when the container is not running.
  Status KillContainer(std::string_view id, std::string_view signal = "SIGKILL",
                       const CallOptions& call = {}) const;
  Status RemoveContainer(std::string_view id, const RemoveOptions& options = {},
                         const CallOptions& call = {}) const;
  // Changes a running container's limits (POST /containers/{id}/update); a field left 0 is
  // not changed. Memory sets MemorySwap to the same value (no swap).
  Status UpdateContainer(std::string_view id, const ResourceUpdate& update,
                         const CallOptions& call = {}) const;
  Result<ContainerInfo> InspectContainer(std::string_view id, const CallOptions& call = {}) const;
  Result<std::vector<ContainerSummary>> ListContainers(const ListOptions& options = {},
                                                       const CallOptions& call = {}) const;

  // -- networks (client_networks.cc) --
  // POST /networks/create with `body` (see BuildNetworkBody); kConflict when the name is
  // taken or, as Docker answers it, the subnet overlaps another network's (its 400 is mapped).
  Result<std::string> CreateNetwork(const nlohmann::json& body, const CallOptions& call = {}) const;
  Status RemoveNetwork(std::string_view name, const CallOptions& call = {}) const;
  Result<NetworkSummary> InspectNetwork(std::string_view name, const CallOptions& call = {}) const;
  Result<std::vector<NetworkSummary>> ListNetworks(const Filters& filters,
                                                   const CallOptions& call = {}) const;
  // Joins a created (not yet started) or running container to a network, at `ipv4` if given.
  Status ConnectNetwork(std::string_view network, std::string_view container, std::string_view ipv4,
                        const CallOptions& call = {}) const;

  // -- archives --
  // A tar of `path` (a file or a directory) plus its stat; works on stopped containers.
  Result<ArchiveData> GetArchive(std::string_view id, std::string_view path,
                                 const CallOptions& call = {}) const;
  // Just the stat (HEAD). kNotFound when the path does not exist.
  Result<PathStat> StatPath(std::string_view id, std::string_view path,
                            const CallOptions& call = {}) const;
  // Extracts `tar` into the existing directory `dir`. Fails (kEngine, HTTP 500 "rootfs is marked
  // read-only") on a container with a read-only root filesystem, even into a tmpfs: by design of
  // the engine; write into a volume or use a writable container instead.
  Status PutArchive(std::string_view id, std::string_view dir, std::string_view tar,
                    const CallOptions& call = {}) const;

  // -- streams --
  // Attaches to a container's streams; call it BEFORE StartContainer so early output is not lost
  // (it returns once the engine registered the attach). `call` bounds only the set-up; the stream
  // then lives until the container exits or the AttachedStream is destroyed.
  Result<std::unique_ptr<AttachedStream>> Attach(std::string_view id, const AttachOptions& options,
                                                 const CallOptions& call = {}) const;
  // Subscribes to engine events. `call` bounds only the set-up.
  Result<std::unique_ptr<EventStream>> Events(const EventOptions& options = {},
                                              const CallOptions& call = {}) const;

 private:
  Client(ClientOptions options, std::unique_ptr<Transport> transport, ApiVersion version);

  // "/v1.41" + path
  std::string Versioned(std::string_view path) const;
  Deadline DeadlineOf(const CallOptions& call) const;
  // Performs the request; a status outside [200, 300) and not in `also_ok` becomes an Error.
  Result<HttpResponse> Call(std::string method, std::string target, std::string body,
                            std::string_view what, const CallOptions& call,
                            std::size_t max_bytes = 0, std::vector<long> also_ok = {}) const;
  Result<nlohmann::json> CallJson(std::string method, std::string target, std::string body,
                                  std::string_view what, const CallOptions& call) const;

  ClientOptions options_;
  std::unique_ptr<Transport> transport_;
  ApiVersion version_;
};

}  // namespace sandbox::docker
