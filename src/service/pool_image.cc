#include "sandbox/service/pool_image.h"

#include <algorithm>

namespace sandbox::service {

namespace {

// The names were checked at start-up (config::Validate): quoting keeps the command one a
// shell reads as printed.
std::string Quoted(const std::string& s) { return "'" + s + "'"; }

std::string LabelOf(const engine::ImageFacts& image, const std::string& key) {
  auto it = image.labels.find(key);
  return it == image.labels.end() ? std::string() : it->second;
}

}  // namespace

std::string CanonicalPackages(const std::vector<std::string>& names) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (const auto& name : sorted) {
    if (name.empty()) continue;
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out;
}

std::string BuildCommand(const config::PoolConfig& pool) {
  const std::string deb = CanonicalPackages(pool.packages);
  const std::string pip = CanonicalPackages(pool.pip_packages);
  if (deb.empty() && pip.empty()) {
    // The sandbox image itself; another name is built with SANDBOX_IMAGE.
    if (pool.image == config::PoolConfig{}.image) return "images/build.sh";
    return "SANDBOX_IMAGE=" + Quoted(pool.image) + " images/build.sh";
  }
  std::string command = "images/build.sh --tag " + Quoted(pool.image);
  if (!deb.empty()) command += " --packages " + Quoted(deb);
  if (!pip.empty()) command += " --pip " + Quoted(pip);
  return command;
}

Status CheckPoolImage(const config::PoolConfig& pool, const Result<engine::ImageFacts>& image) {
  const std::string pool_image = "pool \"" + pool.name + "\" uses image \"" + pool.image + "\"";
  if (!image.ok()) {
    if (image.error().code() == ErrorCode::kNotFound) {
      return Error(
          ErrorCode::kNotFound,
          pool_image + ", which the engine does not have: build it with " + BuildCommand(pool));
    }
    return image.error().WithContext(pool_image);
  }
  const std::string deb = CanonicalPackages(pool.packages);
  const std::string pip = CanonicalPackages(pool.pip_packages);
  if (deb.empty() && pip.empty()) return OkStatus();  // any image of the user's own
  const std::string has_deb = LabelOf(*image, "io.sandbox-mcp.packages");
  const std::string has_pip = LabelOf(*image, "io.sandbox-mcp.pip-packages");
  if (has_deb == deb && has_pip == pip) return OkStatus();
  return Error(ErrorCode::kInvalidArgument, pool_image + ", built with packages \"" + has_deb +
                                                "\" and pip packages \"" + has_pip +
                                                "\", but the pool asks for \"" + deb + "\" and \"" +
                                                pip + "\": rebuild it with " + BuildCommand(pool));
}

}  // namespace sandbox::service
