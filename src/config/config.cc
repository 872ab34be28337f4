// Queries of a Config: pools by name, and the per-principal shares of server-wide bounds.
#include "sandbox/config/config.h"

#include <algorithm>

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

const PoolConfig* FindPool(const Config& config, const std::string& name) {
  for (const auto& pool : config.pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

}  // namespace sandbox::config
