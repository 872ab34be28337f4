// EngineControl: the operator's view of the engines and the drain of one (GET /admin/engines,
// POST /admin/engines/{name}/drain and /undrain). SandboxService implements it.
// Thread-safety: every method from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/core/result.h"

namespace sandbox::service {

class EngineControl {
 public:
  virtual ~EngineControl() = default;
  // Every engine: {name, kind, state ("up", "down", "draining"), why, since, pools: [{name,
  // state ("placed" or "excluded"), why, sandboxes, starting}]}.
  virtual nlohmann::json Engines() const = 0;
  // Draining: no new sandboxes there and its idle ones retired (removed through it); sandboxes
  // lent out finish their run or session. Undrain takes it back. kNotFound for an unknown name;
  // kConflict on a server of one engine (drain its pools instead). Answers the engine as
  // Engines() lists it.
  virtual Result<nlohmann::json> DrainEngine(const std::string& name, bool drain) = 0;
};

}  // namespace sandbox::service
