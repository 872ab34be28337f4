#include "sandbox/docker/container_spec.h"

namespace sandbox::docker {
namespace {

nlohmann::json BuildHostConfig(const HostConfig& h) {
  nlohmann::json j = nlohmann::json::object();
  if (h.network_mode) j["NetworkMode"] = *h.network_mode;
  if (h.memory) j["Memory"] = *h.memory;
  if (h.memory_swap) j["MemorySwap"] = *h.memory_swap;
  if (h.nano_cpus) j["NanoCpus"] = *h.nano_cpus;
  if (h.pids_limit) j["PidsLimit"] = *h.pids_limit;
  if (h.readonly_rootfs) j["ReadonlyRootfs"] = true;
  if (!h.tmpfs.empty()) j["Tmpfs"] = h.tmpfs;
  if (!h.cap_drop.empty()) j["CapDrop"] = h.cap_drop;
  if (!h.cap_add.empty()) j["CapAdd"] = h.cap_add;
  if (!h.security_opt.empty()) j["SecurityOpt"] = h.security_opt;
  if (!h.ulimits.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& u : h.ulimits)
      list.push_back({{"Name", u.name}, {"Soft", u.soft}, {"Hard", u.hard}});
    j["Ulimits"] = std::move(list);
  }
  if (h.init) j["Init"] = *h.init;
  if (h.runtime) j["Runtime"] = *h.runtime;
  if (h.ipc_mode) j["IpcMode"] = *h.ipc_mode;
  if (h.oom_score_adj) j["OomScoreAdj"] = *h.oom_score_adj;
  if (h.shm_size) j["ShmSize"] = *h.shm_size;
  if (!h.dns.empty()) j["Dns"] = h.dns;
  if (!h.dns_options.empty()) j["DnsOptions"] = h.dns_options;
  if (!h.sysctls.empty()) j["Sysctls"] = h.sysctls;
  return j;
}

}  // namespace

nlohmann::json BuildCreateBody(const ContainerSpec& spec) {
  nlohmann::json j = nlohmann::json::object();
  j["Image"] = spec.image;
  if (!spec.cmd.empty()) j["Cmd"] = spec.cmd;
  if (spec.entrypoint) j["Entrypoint"] = *spec.entrypoint;
  if (!spec.env.empty()) j["Env"] = spec.env;
  if (spec.user) j["User"] = *spec.user;
  if (spec.working_dir) j["WorkingDir"] = *spec.working_dir;
  if (!spec.labels.empty()) j["Labels"] = spec.labels;
  j["Tty"] = spec.tty;
  j["OpenStdin"] = spec.open_stdin;
  j["AttachStdin"] = spec.attach_stdin;
  j["AttachStdout"] = spec.attach_stdout;
  j["AttachStderr"] = spec.attach_stderr;
  j["StdinOnce"] = spec.stdin_once;
  if (spec.network_disabled) j["NetworkDisabled"] = true;
  j["HostConfig"] = BuildHostConfig(spec.host_config);
  if (spec.endpoint) {
    nlohmann::json endpoint = nlohmann::json::object();
    if (!spec.endpoint->ipv4.empty()) {
      endpoint["IPAMConfig"] = {{"IPv4Address", spec.endpoint->ipv4}};
    }
    j["NetworkingConfig"] = {{"EndpointsConfig", {{spec.endpoint->network, endpoint}}}};
  }
  if (spec.extra.is_object() && !spec.extra.empty()) j.merge_patch(spec.extra);
  return j;
}

std::string SeccompOpt(const nlohmann::json& profile) { return "seccomp=" + profile.dump(); }

}  // namespace sandbox::docker
