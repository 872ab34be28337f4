#include "sandbox/engine/container_engine.h"

namespace sandbox::engine {
namespace {

Error NoNetworks(const ContainerEngine& engine) {
  return Error(ErrorCode::kUnsupported,
               "the " + std::string(engine.kind()) + " engine \"" + engine.name() +
                   "\" cannot make the networks a pool with an egress policy needs");
}

}  // namespace

Status ContainerEngine::CreateNetwork(const NetworkSpec&, Deadline) const {
  return NoNetworks(*this);
}
Status ContainerEngine::RemoveNetwork(const std::string&, Deadline) const {
  return NoNetworks(*this);
}
Result<std::vector<ListedNetwork>> ContainerEngine::ListNetworks(const Labels&, Deadline) const {
  return NoNetworks(*this);
}
Result<Launched> ContainerEngine::LaunchService(const ServiceSpec&, Deadline) const {
  return NoNetworks(*this);
}

}  // namespace sandbox::engine
