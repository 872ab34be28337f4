#include "egress_setup.h"

#include <spdlog/logger.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

namespace sandbox::server {
namespace {

// A PEM file's text; `key` names the configuration key in errors.
Result<std::string> ReadPem(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorCode::kNotFound, key + ": cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  constexpr std::size_t kMaxPem = std::size_t{256} * 1024;
  if (text.str().size() > kMaxPem || text.str().find("-----BEGIN ") == std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, key + ": " + path + " is not a PEM file");
  }
  return text.str();
}

std::optional<std::string> Getenv(const std::string& name) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the server never changes its own environment.
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace

Result<service::EgressOptions> EgressOptionsOf(const config::Config& config,
                                               std::map<std::string, std::string> labels,
                                               metrics::Metrics& metrics,
                                               const std::shared_ptr<spdlog::logger>& logger) {
  service::EgressOptions options;
  options.config = config.egress;
  options.instance_id = config.instance_id;
  options.labels = std::move(labels);
  options.audit = logger->clone("audit");
  options.on_event = [&metrics](const service::EgressEvent& event) {
    metrics.RecordEgress(event.pool, event.engine, event.kind, event.verdict);
  };
  options.secret = Getenv;
  const auto& e = config.egress;
  if (!e.ca_cert_file.empty()) {
    auto cert = ReadPem(e.ca_cert_file, "egress.ca_cert_file");
    if (!cert.ok()) return cert.error();
    auto key = ReadPem(e.ca_key_file, "egress.ca_key_file");
    if (!key.ok()) return key.error();
    options.ca_cert_pem = std::move(*cert);
    options.ca_key_pem = std::move(*key);
  }
  if (!e.upstream_ca_file.empty()) {
    auto pem = ReadPem(e.upstream_ca_file, "egress.upstream_ca_file");
    if (!pem.ok()) return pem.error();
    options.upstream_ca_pem = std::move(*pem);
  }
  for (std::size_t p = 0; p < config.pools.size(); ++p) {
    const auto& inject = config.pools[p].network.inject;
    for (std::size_t i = 0; i < inject.size(); ++i) {
      if (Getenv(inject[i].value_env)) continue;
      return Error(ErrorCode::kInvalidArgument,
                   "pools[" + std::to_string(p) + "].network.inject[" + std::to_string(i) +
                       "].value_env: the server's environment has no " + inject[i].value_env +
                       " (the credential for " + inject[i].host + ")");
    }
  }
  return options;
}

}  // namespace sandbox::server
