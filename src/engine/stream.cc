#include "sandbox/engine/stream.h"

namespace sandbox::engine {

std::string_view StreamKindName(StreamKind kind) {
  return kind == StreamKind::kStdout ? "stdout" : "stderr";
}

}  // namespace sandbox::engine
