// sandbox::ParseJson (core/json.h), the one parser for JSON from outside. Properties:
//   - it never crashes or throws, whatever the bytes;
//   - a success is never nested deeper than the limit;
//   - where the text stays within the limit it agrees with nlohmann::json::parse exactly
//     (accepts the same texts, builds the same value); beyond it, it refuses with kLimit
//     without parsing;
//   - FindJsonDepthViolation's offset points at an opening bracket.
// The first input byte picks the options (comments, a small depth limit so deep refusals are
// reached with short inputs too).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "sandbox/core/json.h"

namespace {

using nlohmann::json;

// The nesting depth of a value (`[]` and `{}` count 1), without recursion.
int Depth(const json& root) {
  int deepest = 0;
  std::vector<std::pair<const json*, int>> todo{{&root, 0}};
  while (!todo.empty()) {
    auto [value, depth] = todo.back();
    todo.pop_back();
    if (!value->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    for (const auto& child : *value) todo.emplace_back(&child, depth + 1);
  }
  return deepest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  sandbox::JsonParseOptions options;
  options.allow_comments = (data[0] & 1) != 0;
  if ((data[0] & 2) != 0) options.max_depth = 1 + (data[0] >> 4);  // 1..16
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  auto parsed = sandbox::ParseJson(text, options);
  const auto violation =
      sandbox::FindJsonDepthViolation(text, options.max_depth, options.allow_comments);
  if (violation) {
    FUZZ_CHECK(*violation < text.size(), "violation offset inside the text");
    FUZZ_CHECK(text[*violation] == '[' || text[*violation] == '{', "offset at an opener");
    FUZZ_CHECK(!parsed.ok() && parsed.error().code() == sandbox::ErrorCode::kLimit,
               "too deep is refused with kLimit");
    return 0;
  }
  json reference;
  bool reference_ok = true;
  try {
    reference = json::parse(text, nullptr, true, options.allow_comments);
  } catch (const json::exception&) {
    reference_ok = false;
  }
  FUZZ_CHECK(parsed.ok() == reference_ok, "accepts exactly what nlohmann accepts");
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.error().code() == sandbox::ErrorCode::kInvalidArgument, "malformed code");
    FUZZ_CHECK(!parsed.error().message().empty(), "a refusal says why");
    return 0;
  }
  FUZZ_CHECK(Depth(*parsed) <= options.max_depth, "a success stays within the limit");
  // NaN never comes out of a JSON text, so == is a full comparison here.
  FUZZ_CHECK(*parsed == reference, "the same value as nlohmann");
  return 0;
}
