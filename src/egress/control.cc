#include "control.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "injection.h"
#include "probe.h"
#include "sandbox/core/json.h"
#include "sandbox/http1/text.h"

namespace sandbox::egress {
namespace {

Error Bad(std::string message) { return Error(ErrorCode::kInvalidArgument, std::move(message)); }

// The line as JSON, within the control limits. A syntax error's message loses nlohmann's "last
// read: '...'" excerpt: the line may carry a credential, and no answer ever quotes it.
Result<nlohmann::json> ParseControlJson(std::string_view line) {
  if (line.size() > kMaxControlLine) return Bad("a control line longer than 1 MiB");
  auto parsed = ParseJson(line, JsonParseOptions{.max_depth = kMaxControlDepth});
  if (parsed.ok()) return parsed;
  std::string message = parsed.error().message();
  if (const auto excerpt = message.find("; last read"); excerpt != std::string::npos) {
    message.erase(excerpt);
  }
  return Error(parsed.error().code(), std::move(message));
}

Result<config::IpAddress> AddressField(const nlohmann::json& line) {
  auto it = line.find("addr");
  if (it == line.end() || !it->is_string()) return Bad("\"addr\" must be an IP address string");
  auto address = config::ParseIpAddress(it->get<std::string>());
  if (!address.ok()) return Bad("\"addr\": " + address.error().message());
  return *address;
}

Result<std::uint16_t> PortField(const nlohmann::json& line) {
  auto it = line.find("port");
  const auto port = it == line.end() ? std::nullopt : JsonInteger(*it);
  if (!port || *port < 1 || *port > 65535) return Bad("\"port\" must be a port number (1-65535)");
  return static_cast<std::uint16_t>(*port);
}

// Refuses a member the op does not have (a misspelt "inject" must not pass silently).
Status KnownMembers(const nlohmann::json& line, const std::string& op,
                    std::initializer_list<std::string_view> members) {
  for (const auto& [key, value] : line.items()) {
    if (key == "op" || key == "id") continue;
    if (std::find(members.begin(), members.end(), key) == members.end()) {
      return Bad("unknown member \"" + key + "\" in a \"" + op + "\" line");
    }
  }
  return {};
}

Result<std::string> PemField(const nlohmann::json& line, const char* name) {
  auto it = line.find(name);
  if (it == line.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return Bad(std::string("\"") + name + "\" must be a PEM string");
  }
  return it->get<std::string>();
}

// The "inject" member of a set line: per host and port, the headers and what to scrub. Errors
// name the rule by its index and field, never quoting a value.
Result<std::vector<Injection>> InjectField(const nlohmann::json& line,
                                           const config::NetworkPolicy& policy) {
  std::vector<Injection> out;
  auto it = line.find("inject");
  if (it == line.end()) return out;
  if (!it->is_array()) return Bad("\"inject\" must be an array");
  if (it->size() > kMaxInjections) {
    return Bad("\"inject\" has more than " + std::to_string(kMaxInjections) + " rules");
  }
  for (std::size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& item = (*it)[i];
    const std::string where = "inject[" + std::to_string(i) + "]";
    if (!item.is_object()) return Bad(where + " must be an object");
    for (const auto& [key, value] : item.items()) {
      if (key != "host" && key != "port" && key != "header" && key != "value") {
        return Bad(where + " has an unknown member \"" + key + "\"");
      }
    }
    auto host_it = item.find("host");
    if (host_it == item.end() || !host_it->is_string()) {
      return Bad(where + ".host must be a host name string");
    }
    const std::string& host_text = host_it->get_ref<const std::string&>();
    if (config::ParseIpAddress(host_text).ok()) {
      return Bad(where + ".host: an address; credentials go to host names only (the TLS " +
                 "certificate names the host)");
    }
    auto host = config::NormalizeHostName(host_text);
    if (!host.ok()) return Bad(where + ".host: " + host.error().message());
    std::uint16_t port = 443;
    if (auto port_it = item.find("port"); port_it != item.end()) {
      const auto number = JsonInteger(*port_it);
      if (!number || *number < 1 || *number > 65535) {
        return Bad(where + ".port must be a port number (1-65535)");
      }
      port = static_cast<std::uint16_t>(*number);
    }
    auto header_it = item.find("header");
    if (header_it == item.end() || !header_it->is_string()) {
      return Bad(where + ".header must be a header name string");
    }
    const std::string& header = header_it->get_ref<const std::string&>();
    if (auto problem = InjectableHeaderProblem(header); !problem.empty()) {
      return Bad(where + ".header: " + problem);
    }
    auto value_it = item.find("value");
    if (value_it == item.end() || !value_it->is_string()) {
      return Bad(where + ".value must be a string");
    }
    const std::string& value = value_it->get_ref<const std::string&>();
    if (auto problem = SecretValueProblem(value); !problem.empty()) {
      return Bad(where + ".value: " + problem);
    }
    const auto decision = config::DecideName(policy, *host, port);
    if (!decision.allowed) {
      return Bad(where + ".host: the policy does not allow " + *host + ":" + std::to_string(port) +
                 " (" + decision.reason + ")");
    }
    auto rule = std::find_if(out.begin(), out.end(),
                             [&](const Injection& r) { return r.host == *host && r.port == port; });
    if (rule == out.end()) {
      out.push_back(Injection{*host, port, {}, {}});
      rule = out.end() - 1;
    }
    for (const InjectHeader& existing : rule->headers) {
      if (http::Lower(existing.name) == http::Lower(header)) {
        return Bad(where + ": a second " + header + " header for " + *host + ":" +
                   std::to_string(port));
      }
    }
    rule->headers.push_back(InjectHeader{header, value});
  }
  for (Injection& rule : out) {
    for (const InjectHeader& header : rule.headers) {
      for (std::string& pattern : ScrubPatterns(header.value)) {
        rule.scrub.push_back(std::move(pattern));
      }
    }
    std::sort(rule.scrub.begin(), rule.scrub.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() > b.size() : a < b;
    });
    rule.scrub.erase(std::unique(rule.scrub.begin(), rule.scrub.end()), rule.scrub.end());
  }
  return out;
}

Result<std::vector<config::NetworkRule>> Rules(const nlohmann::json& policy, const char* name) {
  std::vector<config::NetworkRule> rules;
  auto it = policy.find(name);
  if (it == policy.end()) return rules;
  if (!it->is_array()) return Bad(std::string("\"policy.") + name + "\" must be an array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& item = (*it)[i];
    const std::string where = std::string("policy.") + name + "[" + std::to_string(i) + "]";
    if (!item.is_string()) return Bad(where + ": an entry must be a string");
    auto rule = config::ParseNetworkRule(item.get<std::string>());
    if (!rule.ok()) return Bad(where + ": " + rule.error().message());
    rules.push_back(std::move(*rule));
  }
  return rules;
}

Result<config::NetworkPolicy> PolicyField(const nlohmann::json& line) {
  auto it = line.find("policy");
  if (it == line.end() || !it->is_object()) return Bad("\"policy\" must be an object");
  const nlohmann::json& policy = *it;
  for (const auto& [key, value] : policy.items()) {
    if (key != "mode" && key != "allow" && key != "deny") {
      return Bad("\"policy\" has an unknown member \"" + key + "\"");
    }
  }
  config::NetworkPolicy out;
  auto mode = policy.find("mode");
  if (mode == policy.end() || !mode->is_string() || (*mode != "allowlist" && *mode != "none")) {
    return Bad("\"policy.mode\" must be \"allowlist\" or \"none\"");
  }
  out.mode = *mode == "allowlist" ? config::NetworkPolicy::Mode::kAllowlist
                                  : config::NetworkPolicy::Mode::kNone;
  auto allow = Rules(policy, "allow");
  if (!allow.ok()) return allow.error();
  auto deny = Rules(policy, "deny");
  if (!deny.ok()) return deny.error();
  out.allow = std::move(*allow);
  out.deny = std::move(*deny);
  return out;
}

}  // namespace

Result<ControlOp> ParseControlLine(std::string_view line) {
  auto parsed = ParseControlJson(line);
  if (!parsed.ok()) return parsed.error();
  const nlohmann::json& json = *parsed;
  if (!json.is_object()) return Bad("a control line must be a JSON object");
  auto op = json.find("op");
  if (op == json.end() || !op->is_string()) return Bad("\"op\" must be a string");
  const std::string name = op->get<std::string>();
  const auto members = [&](std::initializer_list<std::string_view> allowed) {
    return KnownMembers(json, name, allowed);
  };
  if (name == "clear") {
    if (auto known = members({}); !known.ok()) return known.error();
    return ControlOp{ControlClear{}};
  }
  if (name == "remove") {
    if (auto known = members({"addr"}); !known.ok()) return known.error();
    auto address = AddressField(json);
    if (!address.ok()) return address.error();
    return ControlOp{ControlRemove{*address}};
  }
  if (name == "probe") {
    if (auto known = members({"addr", "port"}); !known.ok()) return known.error();
    auto address = AddressField(json);
    if (!address.ok()) return address.error();
    auto port = PortField(json);
    if (!port.ok()) return port.error();
    return ControlOp{ControlProbe{*address, *port}};
  }
  if (name == "ca") {
    if (auto known = members({"cert", "key"}); !known.ok()) return known.error();
    auto cert = PemField(json, "cert");
    if (!cert.ok()) return cert.error();
    auto key = PemField(json, "key");
    if (!key.ok()) return key.error();
    auto authority = CertificateAuthority::Load(*cert, *key);
    if (!authority.ok()) return authority.error();
    return ControlOp{ControlCa{std::move(*authority)}};
  }
  if (name == "counters") {
    if (auto known = members({}); !known.ok()) return known.error();
    return ControlOp{ControlCounters{}};
  }
  if (name == "upstream_ca") {
    if (auto known = members({"pem"}); !known.ok()) return known.error();
    auto pem = PemField(json, "pem");
    if (!pem.ok()) return pem.error();
    auto trust = UpstreamTrust::Create(*pem);
    if (!trust.ok()) return trust.error();
    return ControlOp{ControlUpstreamCa{std::move(*trust)}};
  }
  if (name != "set") {
    return Bad("unknown \"op\" (set, remove, clear, probe, ca, upstream_ca or counters)");
  }
  if (auto known = members({"addr", "pool", "policy", "inject"}); !known.ok()) {
    return known.error();
  }
  auto address = AddressField(json);
  if (!address.ok()) return address.error();
  auto pool = json.find("pool");
  if (pool == json.end() || !pool->is_string() || pool->get_ref<const std::string&>().empty()) {
    return Bad("\"pool\" must be a non-empty string");
  }
  auto policy = PolicyField(json);
  if (!policy.ok()) return policy.error();
  auto inject = InjectField(json, *policy);
  if (!inject.ok()) return inject.error();
  return ControlOp{ControlSet{
      *address, PoolPolicy{pool->get<std::string>(), std::move(*policy), std::move(*inject)}}};
}

namespace {

nlohmann::json ProbeAnswer(const ControlProbe& probe, nlohmann::json answer) {
  const int error = ProbeTcp(probe.addr, probe.port);
  answer["ev"] = "probe";
  answer["addr"] = probe.addr.ToString();
  answer["port"] = probe.port;
  answer["errno"] = error;
  answer["error"] = ErrnoText(error);
  return answer;
}

// The answer's start: the id, echoed even when the rest is refused, so the server can match it.
nlohmann::json AnswerFor(std::string_view line) {
  nlohmann::json answer = nlohmann::json::object();
  if (auto json = ParseControlJson(line); json.ok() && json->is_object() && json->contains("id")) {
    answer["id"] = (*json)["id"];
  }
  return answer;
}

nlohmann::json Refused(nlohmann::json answer, const Error& error) {
  answer["ev"] = "error";
  answer["error"] = "control: " + error.message();
  return answer;
}

// Probes on threads of their own, each answering when it is done.
class Probes {
 public:
  explicit Probes(EventSink& events) : events_(events) {}
  ~Probes() {
    for (auto& probe : running_) probe.thread.join();
  }
  Probes(const Probes&) = delete;
  Probes& operator=(const Probes&) = delete;

  void Start(const ControlProbe& probe, nlohmann::json answer) {
    std::erase_if(running_, [](Running& r) {
      if (!r.done->load()) return false;
      r.thread.join();
      return true;
    });
    if (running_.size() >= static_cast<std::size_t>(kMaxConcurrentProbes)) {
      events_.Emit(
          Refused(std::move(answer), Bad("a probe while " + std::to_string(kMaxConcurrentProbes) +
                                         " are running; retry when one is answered")));
      return;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread thread([this, probe, done, answer = std::move(answer)]() mutable {
      events_.Emit(ProbeAnswer(probe, std::move(answer)));
      done->store(true);
    });
    running_.push_back(Running{std::move(thread), std::move(done)});
  }

 private:
  struct Running {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  EventSink& events_;
  std::vector<Running> running_;
};

// Applies a parsed line (a probe's connect is made here, on the caller's thread).
nlohmann::json ApplyParsed(PolicyTable& table, TlsSettings& tls, nlohmann::json answer,
                           Result<ControlOp> op, const CountersSource& counters) {
  if (!op.ok()) return Refused(std::move(answer), op.error());
  if (std::holds_alternative<ControlCounters>(*op)) {
    if (!counters) return Refused(std::move(answer), Bad("no counters here"));
    const nlohmann::json values = counters();
    for (const auto& [key, value] : values.items()) answer[key] = value;
    answer["ev"] = "counters";
    return answer;
  }
  if (auto* probe = std::get_if<ControlProbe>(&*op)) return ProbeAnswer(*probe, std::move(answer));
  if (auto* ca = std::get_if<ControlCa>(&*op)) {
    answer["ev"] = "applied";
    answer["op"] = "ca";
    answer["subject"] = ca->authority->subject();
    answer["not_after"] = ca->authority->not_after();
    answer["sha256"] = ca->authority->sha256();
    tls.set_authority(std::move(ca->authority));
    return answer;
  }
  if (auto* trust = std::get_if<ControlUpstreamCa>(&*op)) {
    answer["ev"] = "applied";
    answer["op"] = "upstream_ca";
    answer["certificates"] = trust->trust->extra_certificates();
    tls.set_upstream_trust(std::move(trust->trust));
    return answer;
  }
  answer["ev"] = "applied";
  if (auto* set = std::get_if<ControlSet>(&*op)) {
    if (!set->entry.inject.empty() && !tls.authority()) {
      return Refused(std::move(answer),
                     Bad("\"inject\" needs the deployment CA first (op \"ca\")"));
    }
    answer["op"] = "set";
    answer["addr"] = set->addr.ToString();
    answer["pool"] = set->entry.pool;
    if (!set->entry.inject.empty()) {
      // What is injected where, by name: never a value.
      nlohmann::json injected = nlohmann::json::array();
      for (const Injection& rule : set->entry.inject) {
        for (const InjectHeader& header : rule.headers) {
          injected.push_back(rule.host + ":" + std::to_string(rule.port) + " " + header.name);
        }
      }
      answer["inject"] = std::move(injected);
    }
    table.Set(set->addr, std::move(set->entry));
  } else if (auto* remove = std::get_if<ControlRemove>(&*op)) {
    answer["op"] = "remove";
    answer["addr"] = remove->addr.ToString();
    answer["found"] = table.Remove(remove->addr);
  } else {
    answer["op"] = "clear";
    table.Clear();
  }
  answer["entries"] = table.size();
  return answer;
}

}  // namespace

nlohmann::json ApplyControlLine(PolicyTable& table, TlsSettings& tls, std::string_view line,
                                const CountersSource& counters) {
  return ApplyParsed(table, tls, AnswerFor(line), ParseControlLine(line), counters);
}

void RunControl(int fd, PolicyTable& table, TlsSettings& tls, EventSink& events,
                const CountersSource& counters) {
  Probes probes(events);
  std::string pending;
  bool skipping = false;  // inside a line that was too long
  std::array<char, std::size_t{64} << 10> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf.data(), static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl = pending.find('\n'); nl != std::string::npos;
         nl = pending.find('\n', start)) {
      std::string_view line(pending.data() + start, nl - start);
      start = nl + 1;
      if (skipping) {
        skipping = false;
        continue;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
      // Parsed once (a CA or a bundle is not loaded twice); a probe answers later.
      auto op = ParseControlLine(line);
      if (op.ok() && std::holds_alternative<ControlProbe>(*op)) {
        probes.Start(std::get<ControlProbe>(*op), AnswerFor(line));
        continue;
      }
      events.Emit(ApplyParsed(table, tls, AnswerFor(line), std::move(op), counters));
    }
    pending.erase(0, start);
    if (pending.size() > kMaxControlLine) {  // and no end in sight: drop it as it arrives
      if (!skipping) {
        events.Emit({{"ev", "error"}, {"error", "control: a line longer than 1 MiB was skipped"}});
      }
      pending.clear();
      skipping = true;
    }
  }
}

}  // namespace sandbox::egress
