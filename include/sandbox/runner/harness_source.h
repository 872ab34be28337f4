// The in-container harness (the src/harness/sandbox_harness package behind src/harness/loader.py,
// packed into one Python source by cmake/pack_harness.cmake), embedded in the server binary at
// build time and sent to every sandbox over stdin, so it is never baked into an image and always
// matches the server that speaks to it.
#pragma once

#include <string_view>

namespace sandbox::runner {

std::string_view HarnessSource();

}  // namespace sandbox::runner
