#include "sandbox/service/owner.h"

#include <unistd.h>

#include <array>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace sandbox::service {
namespace {

// The bound of one look at a container (an owner's, or this server's own).
constexpr std::chrono::seconds kInspectTimeout{10};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

template <typename Int>
bool ParseInt(std::string_view text, Int& out) {
  if (text.empty()) return false;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

std::vector<std::string_view> Fields(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n') ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool IsHex64(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Label values must not hold spaces; the fields themselves never do.
bool Clean(const std::string& value) {
  return !value.empty() && value.find(' ') == std::string::npos &&
         value.find('=') == std::string::npos;
}

}  // namespace

std::string FormatOwner(const Owner& owner) {
  std::string out = "v1 boot=" + owner.boot_id + " pidns=" + owner.pid_namespace +
                    " pid=" + std::to_string(owner.pid) +
                    " start=" + std::to_string(owner.start_ticks);
  if (!owner.container_id.empty()) {
    out += " container=" + owner.container_id + " started=" + owner.container_started_at;
  }
  return out;
}

std::optional<Owner> ParseOwner(std::string_view text) {
  auto fields = Fields(text);
  if (fields.empty() || fields[0] != "v1") return std::nullopt;
  Owner owner;
  bool pid = false;
  bool start = false;
  for (std::size_t i = 1; i < fields.size(); ++i) {
    auto eq = fields[i].find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    auto key = fields[i].substr(0, eq);
    auto value = fields[i].substr(eq + 1);
    if (key == "boot") {
      owner.boot_id = value;
    } else if (key == "pidns") {
      owner.pid_namespace = value;
    } else if (key == "pid") {
      pid = ParseInt(value, owner.pid) && owner.pid > 0;
    } else if (key == "start") {
      start = ParseInt(value, owner.start_ticks);
    } else if (key == "container") {
      owner.container_id = value;
    } else if (key == "started") {
      owner.container_started_at = value;
    }  // keys of later versions are ignored
  }
  if (owner.boot_id.empty() || owner.pid_namespace.empty() || !pid || !start) return std::nullopt;
  if (owner.container_id.empty() != owner.container_started_at.empty()) return std::nullopt;
  return owner;
}

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  // "PID (comm) S ppid ...": comm may hold anything, so fields count from the last ')'.
  auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  auto fields = Fields(text.substr(close + 1));
  // fields[0] is field 3 (state); starttime is field 22.
  constexpr std::size_t kStartIndex = 22 - 3;
  if (fields.size() <= kStartIndex || fields[0].size() != 1) return std::nullopt;
  ProcStat stat;
  stat.state = fields[0][0];
  if (!ParseInt(fields[kStartIndex], stat.start_ticks)) return std::nullopt;
  return stat;
}

std::optional<ProcStat> SystemOwnerProbe::FindProcess(std::int64_t pid) const {
  auto text = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (text.empty()) return std::nullopt;
  return ParseProcStat(text);
}

Result<OwnerProbe::ContainerLife> SystemOwnerProbe::FindContainer(const std::string& id) const {
  auto state = engine_.Inspect(id, engine::DeadlineAfter(kInspectTimeout));
  ContainerLife life;
  if (!state.ok()) {
    if (state.error().code() == ErrorCode::kNotFound) return life;
    return state.error();
  }
  life.exists = true;
  life.running = state->running && !state->paused;
  life.started_at = state->started_at;
  return life;
}

OwnerDecision DecideOwner(const Owner& owner, const Owner& self, bool engine_local,
                          const OwnerProbe& probe) {
  using V = OwnerVerdict;
  const std::string pid = std::to_string(owner.pid);
  if (!owner.container_id.empty() && owner.container_id != self.container_id) {
    const std::string name = "its server's container " + owner.container_id.substr(0, 12);
    auto life = probe.FindContainer(owner.container_id);
    if (!life.ok()) return {V::kUnknown, "cannot inspect " + name + ": " + life.error().message()};
    if (!life->exists) return {V::kGone, name + " no longer exists"};
    if (!life->running) return {V::kGone, name + " is not running"};
    if (life->started_at != owner.container_started_at) {
      return {V::kGone, name + " was restarted since"};
    }
    return {V::kAlive, name + " runs"};
  }
  if (!owner.container_id.empty() && owner.container_started_at != self.container_started_at) {
    return {V::kGone, "this server's container was restarted since its owner ran in it"};
  }
  // The owner was a process of this container, or of a host.
  if (owner.boot_id != self.boot_id) {
    if (engine_local) return {V::kGone, "its server ran before the machine rebooted"};
    return {V::kUnknown, "its server ran on another machine or boot (the engine is remote)"};
  }
  if (owner.pid_namespace != self.pid_namespace) {
    return {V::kUnknown, "its server runs in another PID namespace (" + owner.pid_namespace + ")"};
  }
  if (owner.pid == self.pid && owner.start_ticks == self.start_ticks) {
    return {V::kAlive, "it is this server's own"};
  }
  auto process = probe.FindProcess(owner.pid);
  if (!process) return {V::kGone, "its server (pid " + pid + ") has exited"};
  if (process->start_ticks != owner.start_ticks) {
    return {V::kGone, "its server (pid " + pid + ") has exited; the pid was reused"};
  }
  if (process->state == 'Z' || process->state == 'X') {
    return {V::kGone, "its server (pid " + pid + ") has exited (not yet reaped)"};
  }
  return {V::kAlive, "its server (pid " + pid + ") runs"};
}

std::string ContainerIdFromMountinfo(std::string_view mountinfo) {
  // Fields: id parent major:minor root mount-point ...
  std::size_t pos = 0;
  while (pos < mountinfo.size()) {
    auto end = mountinfo.find('\n', pos);
    if (end == std::string_view::npos) end = mountinfo.size();
    auto fields = Fields(mountinfo.substr(pos, end - pos));
    pos = end + 1;
    if (fields.size() < 5 || fields[4] != "/etc/hostname") continue;
    constexpr std::string_view kSuffix = "/hostname";
    std::string_view root = fields[3];
    if (root.size() < kSuffix.size() + 64 || !root.ends_with(kSuffix)) continue;
    auto id = root.substr(root.size() - kSuffix.size() - 64, 64);
    if (IsHex64(id)) return std::string(id);
  }
  return {};
}

Result<Owner> DetectOwner(const engine::ContainerEngine& engine) {
  Owner self;
  self.boot_id = Trimmed(ReadFile("/proc/sys/kernel/random/boot_id"));
  std::array<char, 128> ns{};
  auto n = ::readlink("/proc/self/ns/pid", ns.data(), ns.size() - 1);
  if (n > 0) self.pid_namespace.assign(ns.data(), static_cast<std::size_t>(n));
  self.pid = ::getpid();
  auto stat = ParseProcStat(ReadFile("/proc/self/stat"));
  if (!Clean(self.boot_id) || !Clean(self.pid_namespace) || !stat) {
    return Error(ErrorCode::kInternal,
                 "cannot identify this server process for the owner label (/proc/self/stat, "
                 "/proc/self/ns/pid and /proc/sys/kernel/random/boot_id must be readable)");
  }
  self.start_ticks = stat->start_ticks;
  auto id = ContainerIdFromMountinfo(ReadFile("/proc/self/mountinfo"));
  if (!id.empty()) {
    // Only a container this engine runs can be checked by others through it.
    auto state = engine.Inspect(id, engine::DeadlineAfter(kInspectTimeout));
    if (state.ok() && state->running && Clean(state->started_at)) {
      self.container_id = id;
      self.container_started_at = state->started_at;
    }
  }
  return self;
}

bool SweepUnlabelled(const engine::Listed& container, std::chrono::seconds max_life,
                     std::int64_t now_unix_s) {
  if (container.state == "exited" || container.state == "dead") return true;
  return container.created > 0 && now_unix_s - container.created > max_life.count();
}

}  // namespace sandbox::service
