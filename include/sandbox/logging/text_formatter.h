// --log-format text (the default): spdlog's usual line plus the request it belongs to,
//   [2026-12-05 02:15:07.311] [sandbox-mcp] [info] [req 3f9c0a1b2c3d4e5f] pool 'default': ...
// The request id (core/log_context.h) is left out of lines that belong to no request. The
// message has its control bytes escaped (core/log_safe.h, LogEscape) and is cut at
// kLogMessageMaxBytes, and a structured line's fields follow it as ` key=value`: whatever a
// message holds, it is one line of bounded length.
// Thread-safety: spdlog clones a formatter per sink and serialises calls to each.
#pragma once

#include <spdlog/formatter.h>

#include <memory>

namespace sandbox::logging {

std::unique_ptr<spdlog::formatter> MakeTextFormatter();

}  // namespace sandbox::logging
