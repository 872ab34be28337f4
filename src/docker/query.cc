#include "sandbox/docker/query.h"

#include <nlohmann/json.hpp>

namespace sandbox::docker {

std::string PercentEncode(std::string_view text, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    bool unreserved = (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') ||
                      u == '-' || u == '.' || u == '_' || u == '~';
    if (unreserved || keep.find(c) != std::string_view::npos) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0x0F]);
    }
  }
  return out;
}

std::string EncodeFilters(const Filters& filters) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, values] : filters) j[key] = values;
  return j.dump();
}

Query& Query::Add(std::string_view key, std::string_view value) {
  params_.emplace_back(std::string(key), std::string(value));
  return *this;
}

Query& Query::AddFilters(const Filters& filters) {
  if (!filters.empty()) Add("filters", EncodeFilters(filters));
  return *this;
}

std::string Query::Encode() const {
  std::string out;
  for (const auto& [key, value] : params_) {
    out += out.empty() ? '?' : '&';
    out += PercentEncode(key);
    out += '=';
    out += PercentEncode(value);
  }
  return out;
}

}  // namespace sandbox::docker
