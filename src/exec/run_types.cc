#include "sandbox/exec/run_types.h"

#include <cstddef>

namespace sandbox::exec {

std::string_view VerdictName(Verdict verdict) {
  const auto index = static_cast<std::size_t>(verdict);
  return index < kVerdictNames.size() ? kVerdictNames[index] : "internal";
}

std::optional<Verdict> ParseVerdict(std::string_view name) {
  for (std::size_t i = 0; i < kVerdictNames.size(); ++i) {
    if (kVerdictNames[i] == name) return static_cast<Verdict>(i);
  }
  return std::nullopt;
}

nlohmann::json NetworkRequestSchema() {
  const nlohmann::json entries = {{"type", "array"}, {"items", {{"type", "string"}}}};
  return {{"description",
           "narrow the pool's network policy for this run (or session): \"none\" turns the "
           "network off; {\"allow\": [...]} keeps only these of the pool's entries (host, "
           "*.suffix, address or CIDR, optionally :ports), \"deny\" refuses more. Never wider "
           "than the pool's."},
          {"oneOf",
           {{{"type", "string"}, {"enum", {"none"}}},
            {{"type", "object"},
             {"additionalProperties", false},
             {"properties", {{"allow", entries}, {"deny", entries}}},
             {"required", {"allow"}}}}}};
}

Result<NetworkRequest> ParseNetworkRequest(const nlohmann::json& value) {
  auto invalid = [](const std::string& message) {
    return Error(ErrorCode::kInvalidArgument, "network" + message);
  };
  NetworkRequest out;
  if (value.is_string()) {
    if (value != "none") return invalid(": expected \"none\" or an object {allow, deny}");
    out.off = true;
    return out;
  }
  if (!value.is_object()) return invalid(": expected \"none\" or an object {allow, deny}");
  constexpr std::size_t kMaxEntries = 256;
  for (const auto& [key, list] : value.items()) {
    if (key != "allow" && key != "deny") {
      return invalid("." + key + ": unknown field (expected allow, deny)");
    }
    if (!list.is_array()) return invalid("." + key + ": expected an array of entries");
    if (list.size() > kMaxEntries) {
      return invalid("." + key + ": more than " + std::to_string(kMaxEntries) + " entries");
    }
    auto& into = key == "allow" ? out.allow : out.deny;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) {
        return invalid("." + key + "[" + std::to_string(i) + "]: expected a string");
      }
      into.push_back(list[i].get<std::string>());
    }
  }
  if (!value.contains("allow")) {
    return invalid(".allow: required (the entries to keep; \"none\" turns the network off)");
  }
  return out;
}

}  // namespace sandbox::exec
