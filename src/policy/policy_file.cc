#include "policy_file.h"

#include <fstream>
#include <iterator>

#include "sandbox/core/json.h"

namespace sandbox::policy::internal {

namespace {
constexpr std::uintmax_t kMaxPolicyFileBytes = 1 << 20;
}

Result<std::string> ReadPolicyFile(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return Error(ErrorCode::kNotFound,
                 "cannot read policy file " + path.string() + ": " + ec.message());
  }
  if (size > kMaxPolicyFileBytes) {
    return Error(ErrorCode::kLimit, "policy file " + path.string() + " is " + std::to_string(size) +
                                        " bytes, more than 1 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(ErrorCode::kNotFound, "cannot open policy file " + path.string());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Error(ErrorCode::kInternal, "error reading policy file " + path.string());
  return text;
}

Result<nlohmann::json> ParsePolicyJson(std::string_view text) {
  auto parsed = ParseJson(text);
  if (!parsed.ok()) {
    return Error(ErrorCode::kInvalidArgument, "malformed JSON: " + parsed.error().message());
  }
  return parsed;
}

Error InvalidAt(std::string_view where, std::string_view message) {
  std::string text(where);
  text += ": ";
  text += message;
  return Error(ErrorCode::kInvalidArgument, std::move(text));
}

Status CheckObject(const nlohmann::json& value, std::string_view where,
                   std::initializer_list<std::string_view> allowed) {
  if (!value.is_object()) return InvalidAt(where, "expected an object");
  for (const auto& [key, member] : value.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) {
      std::string names;
      for (std::string_view name : allowed) {
        if (!names.empty()) names += ", ";
        names += name;
      }
      return InvalidAt(where, "unknown key \"" + key + "\" (known: " + names + ")");
    }
  }
  return OkStatus();
}

Result<std::string> GetString(const nlohmann::json& value, std::string_view where) {
  if (!value.is_string()) return InvalidAt(where, "expected a string");
  return value.get<std::string>();
}

Result<std::uint64_t> GetUint(const nlohmann::json& value, std::string_view where) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) return InvalidAt(where, "expected a number >= 0");
  return InvalidAt(where, "expected an integer");
}

void StripComments(nlohmann::json& value) {
  if (value.is_object()) {
    value.erase("comment");
    for (auto& [key, member] : value.items()) StripComments(member);
  } else if (value.is_array()) {
    for (auto& element : value) StripComments(element);
  }
}

}  // namespace sandbox::policy::internal
