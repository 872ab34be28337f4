// Byte counts as people read them in messages: "512 bytes", "1.5 KiB", "16.0 MiB", "2.0 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace sandbox {

std::string HumanBytes(std::int64_t bytes);

}  // namespace sandbox
