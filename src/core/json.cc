#include "sandbox/core/json.h"

#include <cmath>
#include <exception>
#include <limits>

namespace sandbox {

std::optional<std::size_t> FindJsonDepthViolation(std::string_view text, int max_depth,
                                                  bool allow_comments) {
  enum class State { kValue, kString, kEscape, kLineComment, kBlockComment };
  State state = State::kValue;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (state) {
      case State::kValue:
        if (c == '"') {
          state = State::kString;
        } else if (c == '[' || c == '{') {
          if (++depth > max_depth) return i;
        } else if (c == ']' || c == '}') {
          // Unbalanced closers are the parser's to report; never let them hide later openers.
          if (depth > 0) --depth;
        } else if (allow_comments && c == '/' && i + 1 < text.size()) {
          if (text[i + 1] == '/') {
            state = State::kLineComment;
            ++i;
          } else if (text[i + 1] == '*') {
            state = State::kBlockComment;
            ++i;
          }
        }
        break;
      case State::kString:
        if (c == '\\') {
          state = State::kEscape;
        } else if (c == '"') {
          state = State::kValue;
        }
        break;
      case State::kEscape:
        state = State::kString;
        break;
      case State::kLineComment:
        if (c == '\n') state = State::kValue;
        break;
      case State::kBlockComment:
        if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') {
          state = State::kValue;
          ++i;
        }
        break;
    }
  }
  return std::nullopt;
}

std::string JsonDepthMessage(int max_depth, std::size_t offset) {
  return "JSON nested deeper than " + std::to_string(max_depth) + " levels (the limit) at byte " +
         std::to_string(offset);
}

Result<nlohmann::json> ParseJson(std::string_view text, const JsonParseOptions& options) {
  if (auto at = FindJsonDepthViolation(text, options.max_depth, options.allow_comments)) {
    return Error(ErrorCode::kLimit, JsonDepthMessage(options.max_depth, *at));
  }
  try {
    return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/true,
                                 /*ignore_comments=*/options.allow_comments);
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidArgument, std::string("invalid JSON: ") + e.what());
  } catch (const std::exception& e) {  // std::bad_alloc on absurd input
    return Error(ErrorCode::kLimit, std::string("JSON could not be parsed: ") + e.what());
  }
}

std::optional<std::int64_t> JsonInteger(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    const auto wide = value.get<std::uint64_t>();
    if (wide > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(wide);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) {
    constexpr double kExact = 9007199254740992.0;  // 2^53
    const double d = value.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > kExact) return std::nullopt;
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace sandbox
