// --log-format json: every log line one JSON object, for log shippers (Loki, Elasticsearch,
// CloudWatch): {"time":"2026-12-04T01:02:03.456Z","level":"info","logger":"sandbox-mcp",
// "thread":123,"msg":"...","request_id":"..."} (request_id only on the lines of a request:
// core/log_context.h), and a structured line's fields (the audit line's) as keys of their own.
// The message is cut at kLogMessageMaxBytes and JSON-escaped (invalid UTF-8 replaced), so
// nothing a client or a run sends can break the line or forge fields.
// Thread-safety: spdlog clones a formatter per sink and serialises calls to each.
#pragma once

#include <spdlog/formatter.h>

#include <memory>

namespace sandbox::logging {

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

}  // namespace sandbox::logging
