// Helpers shared by the two policy parsers (private to the module): reading a policy file and
// checking the shape of its JSON with error messages that say where ("syscalls[3].names[2]").
// Thread-safety: stateless.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"

namespace sandbox::policy::internal {

// The whole file; kNotFound when it cannot be opened, kLimit above 1 MiB (a policy is a few KiB).
Result<std::string> ReadPolicyFile(const std::filesystem::path& path);

// Parses JSON text; kInvalidArgument with the parser's message (it includes the byte offset).
Result<nlohmann::json> ParsePolicyJson(std::string_view text);

// kInvalidArgument naming `where` unless `value` is an object whose keys are all in `allowed`.
Status CheckObject(const nlohmann::json& value, std::string_view where,
                   std::initializer_list<std::string_view> allowed);

Result<std::string> GetString(const nlohmann::json& value, std::string_view where);
// Accepts JSON integers >= 0 only (no floats, no negative numbers, no strings).
Result<std::uint64_t> GetUint(const nlohmann::json& value, std::string_view where);

// Removes every "comment" member of objects, recursively: comments document the file and need not
// travel to the engine.
void StripComments(nlohmann::json& value);

Error InvalidAt(std::string_view where, std::string_view message);

}  // namespace sandbox::policy::internal
