// Bounded JSON parsing: the one way the server turns text from outside (clients, the harness,
// the engine, the configuration file) into nlohmann::json.
//
// nlohmann's parser is iterative, but copying, comparing and serialising a value recurse once
// per nesting level, so a document nested 100,000 levels deep overflows a worker's stack. Every
// entry point therefore refuses input nested deeper than a limit (kMaxJsonDepth by default)
// before any tree is built: a linear scan counts the nesting outside strings first.
// Thread-safety: free functions without shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"

namespace sandbox {

// The nesting depth every JSON entry point accepts: `[]` and `{}` are depth 1, `[[1]]` depth 2.
// Protocol messages need fewer than 10 levels; 64 leaves room for tool arguments.
inline constexpr int kMaxJsonDepth = 64;

struct JsonParseOptions {
  int max_depth = kMaxJsonDepth;  // deeper input is refused with ErrorCode::kLimit
  bool allow_comments = false;    // `//` and `/* */` comments (the configuration file)
};

// Where the first array or object opens beyond `max_depth` levels (a byte offset), or nullopt
// when the text stays within it. Only looks at brackets outside strings (and comments when
// `allow_comments`); says nothing about whether the text is valid JSON.
std::optional<std::size_t> FindJsonDepthViolation(std::string_view text, int max_depth,
                                                  bool allow_comments = false);

// Parses `text`. Errors: kLimit "JSON nested deeper than N levels (at byte K)" when it is
// nested beyond the limit (nothing is parsed then), kInvalidArgument "invalid JSON: ..." for
// malformed text or invalid UTF-8. Never throws.
Result<nlohmann::json> ParseJson(std::string_view text, const JsonParseOptions& options = {});

// The integer a JSON number names, or nullopt when it names none that fits: integers within
// int64's range and integral finite floats within +-2^53 (beyond that a double no longer names
// one integer; 5e8 is 500000000). nlohmann's get<std::int64_t>() on 1e301 is undefined
// behaviour, so every conversion of untrusted numbers goes through here.
std::optional<std::int64_t> JsonInteger(const nlohmann::json& value);

// The message of a depth refusal, for entry points that build their own error body.
std::string JsonDepthMessage(int max_depth, std::size_t offset);

}  // namespace sandbox
