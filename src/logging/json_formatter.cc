#include "sandbox/logging/json_formatter.h"

#include <spdlog/details/log_msg.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/core/log_context.h"
#include "sandbox/core/log_safe.h"

namespace sandbox::logging {

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto since_epoch = msg.time.time_since_epoch();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(msg.time);
  const auto millis = duration_cast<milliseconds>(since_epoch).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char stamp[32];
  const std::size_t n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  char with_millis[40];
  std::snprintf(with_millis, sizeof(with_millis), "%.*s.%03lldZ", static_cast<int>(n), stamp,
                static_cast<long long>(millis));
  const auto level = spdlog::level::to_string_view(msg.level);
  // ordered_json: the fields in reading order (time first), not sorted by name.
  nlohmann::ordered_json line = {
      {"time", with_millis},
      {"level", std::string(level.data(), level.size())},
      {"logger", std::string(msg.logger_name.data(), msg.logger_name.size())},
      {"thread", msg.thread_id},
      {"msg", std::string(msg.payload.data(),
                          std::min<std::size_t>(msg.payload.size(), kLogMessageMaxBytes))}};
  if (const std::string_view id = CurrentRequestId(); !id.empty()) {
    line["request_id"] = std::string(id);
  }
  // A structured line's values, each a key of its own (never one of the keys above).
  if (const LogFields* fields = CurrentLogFields(); fields != nullptr) {
    for (const auto& field : *fields) {
      if (line.contains(field.key)) continue;
      if (const auto* number = std::get_if<std::int64_t>(&field.value)) {
        line[field.key] = *number;
      } else {
        line[field.key] = std::get<std::string>(field.value);
      }
    }
  }
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  dest.append(text.data(), text.data() + text.size());
  dest.push_back('\n');
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

}  // namespace sandbox::logging
