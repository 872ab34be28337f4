#include "sandbox/logging/text_formatter.h"

#include <spdlog/pattern_formatter.h>

#include "sandbox/core/log_context.h"
#include "sandbox/core/log_safe.h"

namespace sandbox::logging {
namespace {

// %Q: " [req ID]" while the thread works for a request, nothing otherwise. The id was checked
// when it was taken (letters, digits, '-', '_', '.'), so it cannot break the line.
class RequestIdFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& /*msg*/, const std::tm& /*tm*/,
              spdlog::memory_buf_t& dest) override {
    const std::string_view id = CurrentRequestId();
    if (id.empty()) return;
    constexpr std::string_view kOpen = " [req ";
    dest.append(kOpen.data(), kOpen.data() + kOpen.size());
    dest.append(id.data(), id.data() + id.size());
    dest.push_back(']');
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<RequestIdFlag>();
  }
};

// %V: the message with its control bytes escaped and cut at kLogMessageMaxBytes, then the
// line's fields (core/log_context.h) as ` key=value`: whatever a message holds, it stays one
// bounded line, and a field's value cannot pose as another field.
class SafeMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*tm*/,
              spdlog::memory_buf_t& dest) override {
    const std::string text = LogEscape(std::string_view(msg.payload.data(), msg.payload.size()),
                                       kLogMessageMaxBytes, /*quotes=*/false);
    dest.append(text.data(), text.data() + text.size());
    if (const LogFields* fields = CurrentLogFields(); fields != nullptr) {
      const std::string rendered = RenderLogFields(*fields);
      dest.append(rendered.data(), rendered.data() + rendered.size());
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<SafeMessageFlag>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> MakeTextFormatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<RequestIdFlag>('Q').add_flag<SafeMessageFlag>('V').set_pattern(
      "[%Y-%m-%d %H:%M:%S.%e] [%n] [%^%l%$]%Q %V");
  return formatter;
}

}  // namespace sandbox::logging
