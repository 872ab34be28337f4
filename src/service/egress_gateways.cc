#include "sandbox/service/egress_gateways.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/core/json.h"
#include "sandbox/core/log_context.h"
#include "sandbox/runner/sandbox_spec.h"

namespace sandbox::service {
namespace {

using engine::Clock;
using engine::Deadline;

constexpr std::string_view kEgressLabel = "io.sandbox-mcp.egress";
constexpr int kProxyPort = 3128;
constexpr std::size_t kMaxLine = std::size_t{1} << 20;
constexpr std::size_t kStderrTail = 2048;
// ECONNREFUSED from the bridge's gateway means the host answered with a closed port: no rule.
constexpr int kFirewalled = 113;  // EHOSTUNREACH: the host firewall's icmp-admin-prohibited

struct Ipv4 {
  std::uint32_t value = 0;
  int prefix = 0;
};

std::optional<Ipv4> ParseCidr(const std::string& text) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  int prefix = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%u.%u.%u.%u/%d%c", &a, &b, &c, &d, &prefix, &tail) != 5 ||
      a > 255 || b > 255 || c > 255 || d > 255 || prefix < 0 || prefix > 32) {
    return std::nullopt;
  }
  return Ipv4{(a << 24) | (b << 16) | (c << 8) | d, prefix};
}

std::string Dotted(std::uint32_t v) {
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." +
         std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255);
}

nlohmann::json PolicyJson(const config::NetworkPolicy& policy) {
  nlohmann::json allow = nlohmann::json::array();
  nlohmann::json deny = nlohmann::json::array();
  for (const auto& rule : policy.allow) allow.push_back(rule.text);
  for (const auto& rule : policy.deny) deny.push_back(rule.text);
  const bool none = policy.mode == config::NetworkPolicy::Mode::kNone;
  return {{"mode", none ? "none" : "allowlist"}, {"allow", allow}, {"deny", deny}};
}

std::string Text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t Number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

}  // namespace

// One pool on one engine: its network and its proxy.
class EgressGateway final : public runner::EgressLink {
 public:
  EgressGateway(const engine::ContainerEngine& engine, const config::PoolConfig& pool,
                const EgressOptions& options, std::function<int()> next_block,
                std::shared_ptr<spdlog::logger> logger)
      : engine_(engine),
        pool_(pool.name),
        pip_index_url_(pool.network.pip_index_url),
        options_(options),
        next_block_(std::move(next_block)),
        logger_(std::move(logger)),
        policy_(pool.network) {}
  ~EgressGateway() override { Stop(); }
  EgressGateway(const EgressGateway&) = delete;
  EgressGateway& operator=(const EgressGateway&) = delete;

  Result<engine::SandboxNetwork> Join(Deadline deadline) override {
    std::lock_guard start(start_mu_);
    if (stopped_) return Error(ErrorCode::kUnavailable, "the server is stopping");
    if (!Alive()) {
      auto started = Start(deadline);
      std::lock_guard lock(mu_);
      last_error_ = started.ok() ? std::string() : started.error().message();
      if (!started.ok()) return started.error();
    }
    engine::SandboxNetwork network;
    network.name = network_name_;
    network.dns = {proxy_address_};
    const std::string proxy = "http://" + proxy_address_ + ":" + std::to_string(kProxyPort);
    // Both spellings: curl reads only the lower-case http_proxy, others the upper-case one.
    for (const char* name : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"}) {
      network.env.push_back(std::string(name) + "=" + proxy);
    }
    if (!pip_index_url_.empty()) network.env.push_back("PIP_INDEX_URL=" + pip_index_url_);
    return network;
  }

  Status Admit(const std::string& address, const config::NetworkPolicy* narrowed,
               Deadline deadline) override {
    std::optional<config::NetworkPolicy> narrower;
    if (narrowed != nullptr) narrower = *narrowed;
    std::lock_guard order(admit_mu_);  // a live change and an admission never interleave
    SANDBOX_RETURN_IF_ERROR(Tell(address, Effective(narrower), deadline));
    std::lock_guard lock(mu_);
    admitted_[address] = std::move(narrower);
    return OkStatus();
  }

  // A live change of the pool's policy (admin API, SIGHUP): every admitted address follows at
  // once, a narrowed one as its narrowing of the new policy.
  Status SetPolicy(const config::NetworkPolicy& policy, Deadline deadline) {
    std::lock_guard order(admit_mu_);
    std::map<std::string, std::optional<config::NetworkPolicy>> admitted;
    {
      std::lock_guard lock(mu_);
      policy_ = policy;
      admitted = admitted_;
    }
    if (!Alive()) return OkStatus();  // told at the proxy's next start
    Status last = OkStatus();
    for (const auto& [address, narrower] : admitted) {
      if (auto told = Tell(address, Effective(narrower), deadline); !told.ok()) last = told;
    }
    return last;
  }

  void Forget(const std::string& address) override {
    std::lock_guard order(admit_mu_);
    {
      std::lock_guard lock(mu_);
      admitted_.erase(address);
    }
    if (!Alive()) return;
    auto sent =
        Send({{"op", "remove"}, {"addr", address}}, engine::DeadlineAfter(std::chrono::seconds(2)));
    if (!sent.ok() && logger_) {
      logger_->warn("egress proxy of pool '{}' on engine {}: could not remove {}: {}", pool_,
                    engine_.name(), address, sent.error().message());
    }
  }

  void Stop() {
    std::lock_guard start(start_mu_);
    stopped_ = true;
    StopProxy();
    if (!network_name_.empty()) {
      auto removed = engine_.RemoveNetwork(network_name_, engine_.DefaultDeadline());
      if (!removed.ok() && logger_) {
        logger_->warn("egress network {} of pool '{}' stays: {}", network_name_, pool_,
                      removed.error().message());
      }
      network_name_.clear();
    }
  }

  EgressStatus Describe() const {
    std::lock_guard lock(mu_);
    return {pool_,
            engine_.name(),
            network_name_,
            subnet_,
            proxy_address_,
            alive_,
            static_cast<int>(admitted_.size()),
            last_error_};
  }

 private:
  bool Alive() const {
    std::lock_guard lock(mu_);
    return alive_;
  }

  // start_mu_ held.
  Status Start(Deadline deadline) {
    StopProxy();  // a proxy that ended: its reader and container
    if (network_name_.empty()) SANDBOX_RETURN_IF_ERROR(MakeNetwork(deadline));
    SANDBOX_RETURN_IF_ERROR(LaunchProxy(deadline));
    auto probed = ProbeFirewall(deadline);
    if (probed.ok()) probed = SendCredentialTrust(deadline);
    if (!probed.ok()) {
      StopProxy();
      return probed;
    }
    // A proxy started again knows nobody: tell it every sandbox that is still there.
    std::lock_guard order(admit_mu_);
    std::map<std::string, std::optional<config::NetworkPolicy>> admitted;
    {
      std::lock_guard lock(mu_);
      admitted = admitted_;
    }
    for (const auto& [address, narrower] : admitted) {
      auto told = Tell(address, Effective(narrower), deadline);
      if (!told.ok()) return told.error().WithContext("tell the egress proxy again");
    }
    if (logger_) {
      logger_->info("egress proxy of pool '{}' on engine {} is up: network {} ({}), proxy {}",
                    pool_, engine_.name(), network_name_, subnet_, proxy_address_);
    }
    return OkStatus();
  }

  Status MakeNetwork(Deadline deadline) {
    for (int attempt = 0; attempt < 256; ++attempt) {
      const int index = next_block_();
      const std::string block = EgressGateways::Block(options_.config.subnets, index);
      if (block.empty()) break;
      const auto cidr = ParseCidr(block);
      engine::NetworkSpec spec;
      char hex[8];
      std::snprintf(hex, sizeof hex, "%06x", cidr->value >> 8);
      spec.bridge = std::string("sbxeg") + hex;
      spec.name = "sandbox-mcp-egress-" + options_.instance_id + "-" + hex;
      spec.subnet = block;
      spec.gateway = Dotted(cidr->value + 1);
      spec.labels = options_.labels;
      spec.labels[std::string(runner::kInstanceLabel)] = options_.instance_id;
      spec.labels[std::string(runner::kPoolLabel)] = pool_;
      spec.labels[std::string(kEgressLabel)] = "network";
      auto created = engine_.CreateNetwork(spec, deadline);
      if (created.ok()) {
        std::lock_guard lock(mu_);
        network_name_ = spec.name;
        subnet_ = block;
        gateway_address_ = spec.gateway;
        proxy_address_ = Dotted(cidr->value + 2);
        return OkStatus();
      }
      if (created.error().code() != ErrorCode::kConflict) {
        return created.error().WithContext("create the egress network");
      }
      if (logger_) {
        logger_->debug("egress network {} not made ({}); trying the next block", block,
                       created.error().message());
      }
    }
    return Error(ErrorCode::kUnavailable,
                 "no free /24 left in egress.subnets " + options_.config.subnets);
  }

  Status LaunchProxy(Deadline deadline) {
    engine::ServiceSpec spec;
    spec.image = options_.config.image;
    spec.cmd = {"/usr/local/bin/sandbox-egress", "--listen",
                "0.0.0.0:" + std::to_string(kProxyPort), "--dns-port", "53"};
    spec.user = "65534:65534";
    spec.labels = options_.labels;
    spec.labels[std::string(runner::kInstanceLabel)] = options_.instance_id;
    spec.labels[std::string(runner::kPoolLabel)] = pool_;
    spec.labels[std::string(kEgressLabel)] = "proxy";
    spec.networks = {{network_name_, proxy_address_}, {options_.config.upstream_network, ""}};
    // Port 53 without a capability.
    spec.sysctls = {{"net.ipv4.ip_unprivileged_port_start", "53"}};
    spec.memory_bytes = 256LL << 20;
    spec.pids_limit = 64;
    auto launched = engine_.LaunchService(spec, deadline);
    if (!launched.ok()) {
      if (launched.error().code() == ErrorCode::kNotFound) {
        return launched.error().WithContext("the egress proxy's image " + spec.image +
                                            " (build it: images/egress/build.sh)");
      }
      return launched.error().WithContext("start the egress proxy");
    }
    auto proxy = std::make_shared<Proxy>();
    proxy->id = launched->id;
    proxy->stream = std::move(launched->stream);
    {
      std::lock_guard lock(mu_);
      proxy_ = proxy;
      alive_ = false;
      ready_ = false;
      stderr_tail_.clear();
    }
    proxy->reader = std::thread([this, proxy] { ReadLoop(*proxy); });
    std::unique_lock lock(mu_);
    const Deadline until = std::min(deadline, engine::DeadlineAfter(options_.ready_timeout));
    if (!cv_.wait_until(lock, until, [&] { return ready_ || proxy->ended; })) {
      return Error(ErrorCode::kTimeout, "the egress proxy did not become ready" +
                                            (stderr_tail_.empty() ? "" : ": " + stderr_tail_));
    }
    if (!ready_) {
      return Error(ErrorCode::kInternal, "the egress proxy ended before it was ready" +
                                             (stderr_tail_.empty() ? "" : ": " + stderr_tail_));
    }
    alive_ = true;
    return OkStatus();
  }

  // The deployment CA and the extra upstream trust, before any sandbox's credentials.
  Status SendCredentialTrust(Deadline deadline) {
    const auto& o = options_;
    std::vector<std::pair<std::string, nlohmann::json>> lines;
    if (!o.ca_cert_pem.empty()) {
      lines.emplace_back(
          "the deployment CA (egress.ca_cert_file, egress.ca_key_file)",
          nlohmann::json{{"op", "ca"}, {"cert", o.ca_cert_pem}, {"key", o.ca_key_pem}});
    }
    if (!o.upstream_ca_pem.empty()) {
      lines.emplace_back("egress.upstream_ca_file",
                         nlohmann::json{{"op", "upstream_ca"}, {"pem", o.upstream_ca_pem}});
    }
    for (auto& [what, line] : lines) {
      auto answer = Ask(std::move(line), deadline);
      if (!answer.ok()) return answer.error().WithContext("send " + what + " to the egress proxy");
      if (Text(*answer, "ev") != "applied") {
        return Error(ErrorCode::kInvalidArgument,
                     "the egress proxy refused " + what + ": " + Text(*answer, "error"));
      }
    }
    return OkStatus();
  }

  Status ProbeFirewall(Deadline deadline) {
    auto answer = Ask({{"op", "probe"}, {"addr", gateway_address_}, {"port", 1}}, deadline);
    std::string problem;
    if (!answer.ok()) {
      problem = answer.error().message();
    } else if (Text(*answer, "ev") != "probe") {
      problem = "the proxy cannot probe (" + Text(*answer, "error") + ")";
    } else if (Number(*answer, "errno") != kFirewalled) {
      problem =
          "a connection from network " + network_name_ + " to the host (" + gateway_address_ +
          ":1) got " +
          (Number(*answer, "errno") == 0 ? std::string("through")
                                         : Text(*answer, "error") + " (errno " +
                                               std::to_string(Number(*answer, "errno")) + ")") +
          ", not the firewall's EHOSTUNREACH";
    }
    if (problem.empty()) return OkStatus();
    const std::string message =
        "the host firewall does not isolate the egress networks: " + problem +
        "; install it with deploy/egress/host-firewall.sh install (docs/network.md, \"Host "
        "firewall\")";
    if (options_.config.require_host_firewall) {
      return Error(ErrorCode::kUnavailable, message);
    }
    if (logger_) {
      logger_->warn("pool '{}' on engine {}: {} (egress.require_host_firewall is off)", pool_,
                    engine_.name(), message);
    }
    return OkStatus();
  }

  struct Proxy {
    std::string id;
    std::unique_ptr<engine::AttachedStream> stream;
    std::thread reader;
    bool ended = false;  // under the gateway's mu_
  };

  // start_mu_ held.
  void StopProxy() {
    std::shared_ptr<Proxy> proxy;
    {
      std::lock_guard lock(mu_);
      proxy = std::move(proxy_);
      alive_ = false;
      ready_ = false;
    }
    if (!proxy) return;
    // End of input stops the proxy; Close() wakes the reader at once.
    [[maybe_unused]] auto closed = proxy->stream->CloseStdin();
    proxy->stream->Close();
    if (proxy->reader.joinable()) proxy->reader.join();
    auto removed = engine_.Remove(proxy->id, engine_.DefaultDeadline());
    if (!removed.ok() && logger_) {
      logger_->warn("egress proxy {} of pool '{}' not removed: {}", proxy->id.substr(0, 12), pool_,
                    removed.error().message());
    }
  }

  // What an address with `narrower` (none: the pool's own) gets under the pool's policy now.
  // A narrowing no longer within a changed policy falls to no network: never more than asked.
  config::NetworkPolicy Effective(const std::optional<config::NetworkPolicy>& narrower) const {
    std::lock_guard lock(mu_);
    if (!narrower) return policy_;
    if (!config::CheckNarrows(policy_, *narrower).ok()) return config::NetworkPolicy{};
    return config::Narrowed(policy_, *narrower);
  }

  Status Tell(const std::string& address, const config::NetworkPolicy& policy, Deadline deadline) {
    nlohmann::json line = {
        {"op", "set"}, {"addr", address}, {"pool", pool_}, {"policy", PolicyJson(policy)}};
    // The credentials of the hosts the address may reach now (a narrowing may leave some out).
    nlohmann::json inject = nlohmann::json::array();
    for (const auto& rule : policy.inject) {
      if (!config::DecideName(policy, rule.host, 443).allowed) continue;
      auto value = options_.secret ? options_.secret(rule.value_env) : std::nullopt;
      if (!value) {
        return Error(ErrorCode::kInvalidArgument,
                     "pool '" + pool_ + "': the credential for " + rule.host +
                         " is missing: the server's environment has no " + rule.value_env);
      }
      inject.push_back({{"host", rule.host}, {"header", rule.header}, {"value", *value}});
    }
    if (!inject.empty()) line["inject"] = std::move(inject);
    auto answer = Ask(std::move(line), deadline);
    if (!answer.ok()) return answer.error();
    if (Text(*answer, "ev") != "applied") {
      return Error(ErrorCode::kInternal,
                   "the egress proxy refused the policy: " + Text(*answer, "error"));
    }
    return OkStatus();
  }

  Status Send(const nlohmann::json& line, Deadline deadline) {
    std::shared_ptr<Proxy> proxy;
    {
      std::lock_guard lock(mu_);
      proxy = proxy_;
    }
    if (!proxy) return Error(ErrorCode::kUnavailable, "the egress proxy is not running");
    std::lock_guard write(write_mu_);
    return proxy->stream->Write(line.dump() + "\n", deadline);
  }

  Result<nlohmann::json> Ask(nlohmann::json line, Deadline deadline) {
    std::int64_t id = 0;
    {
      std::lock_guard lock(mu_);
      id = ++next_id_;
      if (proxy_ == nullptr || proxy_->ended) {
        return Error(ErrorCode::kUnavailable, "the egress proxy of pool '" + pool_ + "' ended");
      }
    }
    line["id"] = id;
    SANDBOX_RETURN_IF_ERROR(Send(line, deadline));
    std::unique_lock lock(mu_);
    const bool answered = cv_.wait_until(lock, deadline, [&] {
      return answers_.contains(id) || proxy_ == nullptr || proxy_->ended;
    });
    auto it = answers_.find(id);
    if (it == answers_.end()) {
      return Error(answered ? ErrorCode::kUnavailable : ErrorCode::kTimeout,
                   answered ? "the egress proxy of pool '" + pool_ + "' ended"
                            : "the egress proxy of pool '" + pool_ + "' did not answer");
    }
    nlohmann::json answer = std::move(it->second);
    answers_.erase(it);
    return answer;
  }

  void ReadLoop(Proxy& proxy) {
    std::string buffer;
    std::string why = "its output ended";
    for (;;) {
      auto chunk = proxy.stream->Read(engine::DeadlineAfter(std::chrono::hours(1)));
      if (!chunk.ok() && chunk.error().code() == ErrorCode::kTimeout) continue;
      if (!chunk.ok()) {
        why = chunk.error().message();
        break;
      }
      if (!chunk->has_value()) break;
      if ((*chunk)->stream == engine::StreamKind::kStderr) {
        std::lock_guard lock(mu_);
        stderr_tail_ += (*chunk)->data;
        if (stderr_tail_.size() > kStderrTail) {
          stderr_tail_.erase(0, stderr_tail_.size() - kStderrTail);
        }
        continue;
      }
      buffer += (*chunk)->data;
      std::size_t start = 0;
      for (auto end = buffer.find('\n'); end != std::string::npos; end = buffer.find('\n', start)) {
        OnLine(std::string_view{buffer}.substr(start, end - start));
        start = end + 1;
      }
      buffer.erase(0, start);
      if (buffer.size() > kMaxLine) buffer.clear();  // a line that long is no event of ours
    }
    bool was_alive = false;
    {
      std::lock_guard lock(mu_);
      was_alive = alive_;
      proxy.ended = true;
      alive_ = false;
      ready_ = false;
    }
    cv_.notify_all();
    if (was_alive && !stopped_ && logger_) {
      logger_->warn(
          "egress proxy of pool '{}' on engine {} ended ({}); started again with the "
          "next sandbox",
          pool_, engine_.name(), why);
    }
  }

  void OnLine(std::string_view text) {
    auto parsed = ParseJson(text);
    if (!parsed.ok() || !parsed->is_object()) return;
    nlohmann::json& event = *parsed;
    const std::string ev = Text(event, "ev");
    if (event.contains("id") && event["id"].is_number_integer()) {
      {
        std::lock_guard lock(mu_);
        answers_[event["id"].get<std::int64_t>()] = event;
        // Answers nobody waits for any more (a deadline passed) must not pile up.
        while (answers_.size() > 1024) answers_.erase(answers_.begin());
      }
      cv_.notify_all();
      return;
    }
    if (ev == "ready") {
      {
        std::lock_guard lock(mu_);
        ready_ = true;
      }
      cv_.notify_all();
    } else if (ev == "conn" || ev == "dns") {
      Audit(ev, event);
    } else if ((ev == "error" || ev == "dropped") && logger_) {
      logger_->warn("egress proxy of pool '{}' on engine {}: {}", pool_, engine_.name(),
                    event.dump());
    }
  }

  void Audit(const std::string& kind, const nlohmann::json& event) {
    const std::string pool = Text(event, "pool");
    const std::string verdict = kind == "dns" ? "refused" : Text(event, "verdict");
    if (options_.on_event) options_.on_event({pool, engine_.name(), kind, verdict});
    if (!options_.audit) return;
    LogFields fields = {{"kind", kind},
                        {"pool", pool.empty() ? std::string("-") : pool},
                        {"engine", engine_.name()},
                        {"addr", Text(event, "addr")}};
    if (kind == "dns") {
      fields.push_back({"name", Text(event, "name")});
      fields.push_back({"verdict", verdict});
    } else {
      fields.push_back({"method", Text(event, "method")});
      fields.push_back({"target", Text(event, "target")});
      if (!Text(event, "sni").empty()) fields.push_back({"sni", Text(event, "sni")});
      fields.push_back({"verdict", verdict});
      if (!Text(event, "reason").empty()) fields.push_back({"reason", Text(event, "reason")});
      // An allowed connection the proxy ended at its per-connection bytes or time limit.
      if (!Text(event, "cut").empty()) fields.push_back({"cut", Text(event, "cut")});
      fields.push_back({"status", Number(event, "status")});
      fields.push_back({"bytes_up", Number(event, "bytes_up")});
      fields.push_back({"bytes_down", Number(event, "bytes_down")});
      fields.push_back({"ms", Number(event, "ms")});
    }
    ScopedLogFields scope(fields);
    options_.audit->info("egress");
  }

  const engine::ContainerEngine& engine_;
  const std::string pool_;
  const std::string pip_index_url_;
  const EgressOptions& options_;
  std::function<int()> next_block_;
  std::shared_ptr<spdlog::logger> logger_;

  std::mutex start_mu_;  // one start or stop at a time; held across engine calls
  std::atomic<bool> stopped_{false};
  std::mutex write_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Proxy> proxy_;
  bool ready_ = false;
  bool alive_ = false;
  std::string stderr_tail_;
  std::int64_t next_id_ = 0;
  std::map<std::int64_t, nlohmann::json> answers_;
  // address -> its narrowing of the pool's policy (none: the pool's own)
  std::map<std::string, std::optional<config::NetworkPolicy>> admitted_;
  config::NetworkPolicy policy_;  // the pool's, as live changes leave it
  std::mutex admit_mu_;           // admissions, removals and live changes one at a time
  std::string network_name_;
  std::string subnet_;
  std::string gateway_address_;
  std::string proxy_address_;
  std::string last_error_;
};

EgressGateways::EgressGateways(EgressOptions options, std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)), logger_(std::move(logger)) {}

EgressGateways::~EgressGateways() { Stop(); }

std::string EgressGateways::Block(const std::string& subnets, int index) {
  const auto cidr = ParseCidr(subnets);
  if (!cidr || cidr->prefix > 24 || index < 0) return {};
  const std::uint64_t blocks = std::uint64_t{1} << (24 - cidr->prefix);
  if (static_cast<std::uint64_t>(index) >= blocks) return {};
  const std::uint32_t mask = cidr->prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - cidr->prefix);
  const std::uint32_t base = cidr->value & mask;
  return Dotted(base + (static_cast<std::uint32_t>(index) << 8)) + "/24";
}

int EgressGateways::NextBlock() { return next_block_.fetch_add(1); }

runner::EgressLink* EgressGateways::For(const engine::ContainerEngine& engine,
                                        const config::PoolConfig& pool) {
  if (pool.network.mode == config::NetworkPolicy::Mode::kNone) return nullptr;
  std::lock_guard lock(mu_);
  // The first ask of a pool sets its policy; a live change (SetPolicy) is what changes it.
  auto policy = policies_.try_emplace(pool.name, pool.network).first->second;
  auto& slot = gateways_[{engine.name(), pool.name}];
  if (!slot) {
    config::PoolConfig now = pool;
    now.network = policy;
    slot = std::make_unique<EgressGateway>(
        engine, now, options_, [this] { return NextBlock(); }, logger_);
  }
  return slot.get();
}

void EgressGateways::SweepLeftovers(const engine::ContainerEngine& engine) {
  auto listed = engine.ListNetworks({{std::string(runner::kInstanceLabel), options_.instance_id},
                                     {std::string(kEgressLabel), "network"}},
                                    engine.DefaultDeadline());
  if (!listed.ok()) {
    // Not every engine makes networks; one that cannot has none to sweep.
    if (listed.error().code() != ErrorCode::kUnsupported && logger_) {
      logger_->warn("engine {}: could not list leftover egress networks: {}", engine.name(),
                    listed.error().message());
    }
    return;
  }
  for (const auto& network : *listed) {
    if (network.containers > 0) continue;  // in use: a live server's
    auto removed = engine.RemoveNetwork(network.name, engine.DefaultDeadline());
    if (logger_) {
      if (removed.ok()) {
        logger_->info("engine {}: removed the leftover egress network {}", engine.name(),
                      network.name);
      } else {
        logger_->warn("engine {}: leftover egress network {} stays: {}", engine.name(),
                      network.name, removed.error().message());
      }
    }
  }
}

Status EgressGateways::SetPolicy(const std::string& pool, const config::NetworkPolicy& policy) {
  std::vector<EgressGateway*> of_pool;
  {
    std::lock_guard lock(mu_);
    auto current = policies_.find(pool);
    if (current == policies_.end()) {
      return Error(ErrorCode::kNotFound, "pool '" + pool + "' has no network policy to change");
    }
    current->second = policy;
    for (auto& [key, gateway] : gateways_) {
      if (key.second == pool) of_pool.push_back(gateway.get());
    }
  }
  Status last = OkStatus();
  for (auto* gateway : of_pool) {
    auto set = gateway->SetPolicy(policy, engine::DeadlineAfter(std::chrono::seconds(5)));
    if (!set.ok()) last = set;
  }
  return last;
}

std::optional<config::NetworkPolicy> EgressGateways::Policy(const std::string& pool) const {
  std::lock_guard lock(mu_);
  auto it = policies_.find(pool);
  if (it == policies_.end()) return std::nullopt;
  return it->second;
}

std::vector<EgressStatus> EgressGateways::Statuses() const {
  std::lock_guard lock(mu_);
  std::vector<EgressStatus> out;
  for (const auto& [key, gateway] : gateways_) out.push_back(gateway->Describe());
  return out;
}

void EgressGateways::Stop() {
  // The gateways stay (sandboxes may still hold their links); they only stop.
  std::lock_guard lock(mu_);
  for (auto& [key, gateway] : gateways_) gateway->Stop();
}

}  // namespace sandbox::service
