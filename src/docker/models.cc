#include "sandbox/docker/models.h"

#include "sandbox/core/json.h"

namespace sandbox::docker {
namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  return sandbox::JsonInteger(*it).value_or(0);
}

bool Bool(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::vector<std::string> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> StringMap(const json& j, const char* key) {
  std::map<std::string, std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return out;
  for (const auto& [k, v] : it->items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

// A copy, so that a missing member needs no static empty object.
json Object(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : json::object();
}

Error NotAnObject(const char* what) {
  return Error(ErrorCode::kProtocol, std::string("Docker engine sent a malformed ") + what);
}

}  // namespace

Result<VersionInfo> ParseVersion(const json& j) {
  if (!j.is_object()) return NotAnObject("version answer");
  VersionInfo v;
  v.version = Str(j, "Version");
  v.api_version = Str(j, "ApiVersion");
  v.min_api_version = Str(j, "MinAPIVersion");
  v.os = Str(j, "Os");
  v.arch = Str(j, "Arch");
  v.kernel_version = Str(j, "KernelVersion");
  v.raw = j;
  return v;
}

Result<SystemInfo> ParseInfo(const json& j) {
  if (!j.is_object()) return NotAnObject("info answer");
  SystemInfo i;
  i.id = Str(j, "ID");
  i.name = Str(j, "Name");
  i.server_version = Str(j, "ServerVersion");
  i.operating_system = Str(j, "OperatingSystem");
  i.cgroup_version = Str(j, "CgroupVersion");
  i.default_runtime = Str(j, "DefaultRuntime");
  const json runtimes = Object(j, "Runtimes");
  for (auto it = runtimes.begin(); it != runtimes.end(); ++it) i.runtimes.push_back(it.key());
  i.ncpu = Int(j, "NCPU");
  i.mem_total = Int(j, "MemTotal");
  i.raw = j;
  return i;
}

Result<ImageInfo> ParseImageInspect(const json& j) {
  if (!j.is_object() || Str(j, "Id").empty()) return NotAnObject("image inspect answer");
  ImageInfo i;
  i.id = Str(j, "Id");
  i.repo_tags = Strings(j, "RepoTags");
  i.size = Int(j, "Size");
  const json config = Object(j, "Config");
  i.user = Str(config, "User");
  i.env = Strings(config, "Env");
  i.cmd = Strings(config, "Cmd");
  i.entrypoint = Strings(config, "Entrypoint");
  i.labels = StringMap(config, "Labels");
  i.raw = j;
  return i;
}

Result<CreatedContainer> ParseCreated(const json& j) {
  if (!j.is_object() || Str(j, "Id").empty()) return NotAnObject("container create answer");
  return CreatedContainer{Str(j, "Id"), Strings(j, "Warnings")};
}

Result<ContainerInfo> ParseContainerInspect(const json& j) {
  if (!j.is_object() || Str(j, "Id").empty()) return NotAnObject("container inspect answer");
  ContainerInfo c;
  c.id = Str(j, "Id");
  c.name = Str(j, "Name");
  if (!c.name.empty() && c.name.front() == '/') c.name.erase(0, 1);
  c.image = Str(j, "Image");
  const json config = Object(j, "Config");
  c.config_image = Str(config, "Image");
  c.labels = StringMap(config, "Labels");
  const json s = Object(j, "State");
  c.state.status = Str(s, "Status");
  c.state.running = Bool(s, "Running");
  c.state.oom_killed = Bool(s, "OOMKilled");
  c.state.exit_code = Int(s, "ExitCode");
  c.state.pid = Int(s, "Pid");
  c.state.started_at = Str(s, "StartedAt");
  c.state.finished_at = Str(s, "FinishedAt");
  c.state.error = Str(s, "Error");
  const json networks = Object(Object(j, "NetworkSettings"), "Networks");
  for (const auto& [name, endpoint] : networks.items()) {
    if (!endpoint.is_object()) continue;
    std::string address = Str(endpoint, "IPAddress");
    if (!address.empty()) c.ip_addresses[name] = std::move(address);
  }
  c.raw = j;
  return c;
}

Result<std::vector<ContainerSummary>> ParseContainerList(const json& j) {
  if (!j.is_array()) return NotAnObject("container list answer");
  std::vector<ContainerSummary> out;
  for (const auto& item : j) {
    if (!item.is_object()) return NotAnObject("container list entry");
    ContainerSummary s;
    s.id = Str(item, "Id");
    s.names = Strings(item, "Names");
    for (auto& n : s.names) {
      if (!n.empty() && n.front() == '/') n.erase(0, 1);
    }
    s.image = Str(item, "Image");
    s.state = Str(item, "State");
    s.status = Str(item, "Status");
    s.created = Int(item, "Created");
    s.labels = StringMap(item, "Labels");
    out.push_back(std::move(s));
  }
  return out;
}

Result<WaitResult> ParseWait(const json& j) {
  if (!j.is_object() || !j.contains("StatusCode")) return NotAnObject("container wait answer");
  WaitResult w;
  w.exit_code = Int(j, "StatusCode");
  auto it = j.find("Error");
  if (it != j.end() && it->is_object()) w.error = Str(*it, "Message");
  return w;
}

Result<NetworkSummary> ParseNetwork(const json& j) {
  if (!j.is_object() || Str(j, "Id").empty()) return NotAnObject("network answer");
  NetworkSummary n;
  n.id = Str(j, "Id");
  n.name = Str(j, "Name");
  n.labels = StringMap(j, "Labels");
  n.containers = static_cast<int>(Object(j, "Containers").size());
  return n;
}

Result<std::vector<NetworkSummary>> ParseNetworkList(const json& j) {
  if (!j.is_array()) return NotAnObject("network list answer");
  std::vector<NetworkSummary> out;
  for (const auto& item : j) {
    auto n = ParseNetwork(item);
    if (!n.ok()) return n.error();
    out.push_back(std::move(*n));
  }
  return out;
}

}  // namespace sandbox::docker
