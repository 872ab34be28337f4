// Whether a pool's image is the one its configuration asks for, and how to build it. A pool
// with `packages` / `pip_packages` names an image built by images/build.sh --tag, whose labels
// (io.sandbox-mcp.packages, io.sandbox-mcp.pip-packages) list what it was built with; start-up
// compares them with the configuration, so a pool never serves an image without the packages
// its users were promised. Both sides spell a list the same way (CanonicalPackages).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/core/result.h"
#include "sandbox/engine/container_engine.h"

namespace sandbox::service {

// Sorted, without duplicates, separated by single spaces: images/build.sh's `canonical`.
std::string CanonicalPackages(const std::vector<std::string>& names);

// The command that builds the pool's image, e.g.
//   images/build.sh --tag 'sandbox-mcp-python:ml' --packages 'python3-sklearn'
std::string BuildCommand(const config::PoolConfig& pool);

// OK when `image` (the engine's answer for pool.image, engine::ContainerEngine::CheckImage)
// exists and carries pool's packages; otherwise an error naming the pool, what is wrong and the
// command that fixes it.
Status CheckPoolImage(const config::PoolConfig& pool, const Result<engine::ImageFacts>& image);

}  // namespace sandbox::service
