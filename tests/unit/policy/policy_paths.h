// Where the shipped policies are: $SANDBOX_SOURCE_DIR/policies (sandbox_add_test sets the
// variable).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace sandbox::policy::testing {

inline std::filesystem::path PoliciesDir() {
  const char* source_dir = std::getenv("SANDBOX_SOURCE_DIR");
  if (source_dir == nullptr) throw std::runtime_error("SANDBOX_SOURCE_DIR is not set");
  return std::filesystem::path(source_dir) / "policies";
}

}  // namespace sandbox::policy::testing
