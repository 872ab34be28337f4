// The egress gateways' options from the configuration (docs/network.md): the owner labels, the
// audit logger and counter, and for credentials the deployment CA read from its files and the
// check, at start-up, that every configured credential's variable is set in this process's
// environment (a missing one fails the start naming it, never at a sandbox's first request).
// Thread-safety: a function of its arguments; the secret lookup it returns reads the
// environment (getenv) and may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/metrics/metrics.h"
#include "sandbox/service/egress_gateways.h"

namespace spdlog {
class logger;
}

namespace sandbox::server {

Result<service::EgressOptions> EgressOptionsOf(const config::Config& config,
                                               std::map<std::string, std::string> labels,
                                               metrics::Metrics& metrics,
                                               const std::shared_ptr<spdlog::logger>& logger);

}  // namespace sandbox::server
