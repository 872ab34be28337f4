// Who owns a sandbox container, and whether that owner is provably gone. Every container a
// server starts carries the label io.sandbox-mcp.owner naming the server process (see Owner);
// at start-up a server removes the containers of its instance id whose owner is gone (crash
// recovery) and leaves the others alone, so a second server with the same instance id (a
// stdio server started by a client with the default id, a second HTTP server) never destroys
// a live server's sandboxes and sessions.
//
// The decision (DecideOwner) is pure over an OwnerProbe, the seam to /proc and the engine
// (engine::ContainerEngine), so unit tests drive it with fakes. Thread-safety: pure functions;
// SystemOwnerProbe is immutable and safe to share.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/engine/container_engine.h"

namespace sandbox::service {

inline constexpr std::string_view kOwnerLabel = "io.sandbox-mcp.owner";

// A server process, identified so that neither a reused pid nor a restarted container nor a
// reboot can pass for it.
struct Owner {
  std::string boot_id;        // /proc/sys/kernel/random/boot_id: changes with every boot
  std::string pid_namespace;  // readlink /proc/self/ns/pid, e.g. "pid:[4026531836]"
  std::int64_t pid = 0;
  std::uint64_t start_ticks = 0;  // field 22 of /proc/PID/stat: a reused pid has another
  // Set when the server runs in a container of the same engine (the compose deployment): its
  // id and State.StartedAt (a restart under the same id changes it). Other processes cannot see
  // into the container's PID namespace, so they ask the engine about the container instead.
  std::string container_id;
  std::string container_started_at;
};

// "v1 boot=B pidns=N pid=P start=S[ container=ID started=T]" (a label value).
std::string FormatOwner(const Owner& owner);
// nullopt when `text` is not a FormatOwner() value of a version this build reads.
std::optional<Owner> ParseOwner(std::string_view text);

// What /proc/PID/stat says: the process state letter and its start time in clock ticks.
struct ProcStat {
  char state = '?';
  std::uint64_t start_ticks = 0;
};
// Parses the text of /proc/PID/stat (the command name may hold spaces and parentheses).
std::optional<ProcStat> ParseProcStat(std::string_view text);

// The seam to the world: a live process of this PID namespace, and a container of the engine.
class OwnerProbe {
 public:
  virtual ~OwnerProbe() = default;
  // nullopt: no process with this pid.
  virtual std::optional<ProcStat> FindProcess(std::int64_t pid) const = 0;
  struct ContainerLife {
    bool exists = false;
    bool running = false;
    std::string started_at;
  };
  // An Error when the engine cannot tell (then nothing is decided).
  virtual Result<ContainerLife> FindContainer(const std::string& id) const = 0;
};

// Reads /proc and inspects containers through `engine`.
class SystemOwnerProbe final : public OwnerProbe {
 public:
  explicit SystemOwnerProbe(const engine::ContainerEngine& engine) : engine_(engine) {}
  std::optional<ProcStat> FindProcess(std::int64_t pid) const override;
  Result<ContainerLife> FindContainer(const std::string& id) const override;

 private:
  const engine::ContainerEngine& engine_;
};

enum class OwnerVerdict {
  kAlive,    // the owner runs (or it is this very server): never touched
  kGone,     // provably gone: its containers are leftovers
  kUnknown,  // cannot be told from here (another machine or PID namespace): left alone
};

struct OwnerDecision {
  OwnerVerdict verdict = OwnerVerdict::kUnknown;
  std::string reason;  // for the log
};

// `engine_local`: the engine is reached over a Unix socket, so it runs on this machine and a
// different boot id means the owner ran before a reboot. Over TCP the owner may be another
// machine, and only a container owner can be checked.
OwnerDecision DecideOwner(const Owner& owner, const Owner& self, bool engine_local,
                          const OwnerProbe& probe);

// This server process as an Owner. Inside a container `engine` runs (found by the engine's bind
// mount of /etc/hostname in /proc/self/mountinfo, confirmed running by the engine), the
// container's id and start time are filled in too.
Result<Owner> DetectOwner(const engine::ContainerEngine& engine);

// Containers without the owner label were started by a version before it; their owner cannot
// be checked. One is swept only when it cannot belong to a live server: it has stopped
// (exited/dead: a live server removes its own at once), or it was created longer ago than any
// live server keeps a container (`max_life`, see LeftoverMaxLife in sandbox_service.h).
bool SweepUnlabelled(const engine::Listed& container, std::chrono::seconds max_life,
                     std::int64_t now_unix_s);

// The container id named by the engine's bind mount of /etc/hostname in a mountinfo text
// (the root of that mount is .../containers/<64 hex>/hostname); empty when there is none.
std::string ContainerIdFromMountinfo(std::string_view mountinfo);

}  // namespace sandbox::service
