// Queries of a Config: pools by name, the engines, and the per-principal shares of server-wide
// bounds.
#include "sandbox/config/config.h"

#include <algorithm>
#include <string>
#include <vector>

namespace sandbox::config {

std::string_view PoolModeName(PoolMode mode) {
  return mode == PoolMode::kRecycle ? "recycle" : "fresh";
}

int PrincipalCount(const Config& config) {
  const int named = static_cast<int>(config.server.tokens.size());
  return std::max(1, named + (config.server.token.empty() ? 0 : 1));
}

namespace {

// One principal's share of a server-wide bound: the configured share, else bound / divisor;
// the whole bound while only one principal exists (there is nobody to starve).
int ShareOf(const Config& config, int configured, int bound, int divisor) {
  if (PrincipalCount(config) == 1) return bound;
  return configured > 0 ? configured : std::max(1, bound / divisor);
}

}  // namespace

int StreamsPerPrincipal(const Config& config) {
  return ShareOf(config, config.per_principal.max_streams, config.server.max_streams, 2);
}

int McpSessionsPerPrincipal(const Config& config) {
  return ShareOf(config, config.per_principal.max_mcp_sessions, config.server.max_mcp_sessions, 10);
}

std::vector<EngineConfig> EffectiveEngines(const DockerConfig& docker) {
  if (!docker.engines.empty()) return docker.engines;
  EngineConfig local;
  local.name = kShorthandEngineName;
  local.host = docker.host;
  local.tls_ca = docker.tls_ca;
  local.tls_cert = docker.tls_cert;
  local.tls_key = docker.tls_key;
  return {local};
}

std::vector<std::string> PoolEngineNames(const PoolConfig& pool, const DockerConfig& docker) {
  if (!pool.engines.empty()) return pool.engines;
  std::vector<std::string> names;
  for (const auto& engine : EffectiveEngines(docker)) names.push_back(engine.name);
  return names;
}

const PoolConfig* FindPool(const Config& config, const std::string& name) {
  for (const auto& pool : config.pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

}  // namespace sandbox::config
