// The in-container harness (src/harness/harness.py), embedded in the server binary at build
// time and sent to every sandbox over stdin, so it is never baked into an image and always
// matches the server that speaks to it.
#pragma once

#include <string_view>

namespace sandbox::runner {

std::string_view HarnessSource();

}  // namespace sandbox::runner
