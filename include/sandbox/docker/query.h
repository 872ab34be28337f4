// URL building for Engine API requests: percent-encoding, query strings and the JSON `filters`
// parameter (e.g. {"label":["io.sandbox-mcp.managed=true"]}). Pure functions, unit-tested.
// Thread-safety: value type and pure functions; safe from any thread.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandbox::docker {

// Percent-encodes every byte except RFC 3986 unreserved characters and those in `keep`.
std::string PercentEncode(std::string_view text, std::string_view keep = "");

// Encodes one path segment (a container id or name): everything but unreserved is escaped.
inline std::string PathSegment(std::string_view text) { return PercentEncode(text); }

// Encodes an image reference for /images/{name}/json: '/', ':' and '@' stay, since the engine
// routes the rest of the path as the name.
inline std::string ImagePath(std::string_view ref) { return PercentEncode(ref, "/:@"); }

// Engine list filters: key -> values, e.g. {"label": {"a=b"}, "type": {"container"}}.
using Filters = std::map<std::string, std::vector<std::string>>;

// The JSON text of `filters` in the map[string][]string form every supported engine accepts.
std::string EncodeFilters(const Filters& filters);

// An ordered list of query parameters; Encode() gives "?k=v&..." or "" when empty.
class Query {
 public:
  Query& Add(std::string_view key, std::string_view value);
  Query& Add(std::string_view key, const char* value) { return Add(key, std::string_view(value)); }
  Query& Add(std::string_view key, bool value) {
    return Add(key, std::string_view(value ? "1" : "0"));
  }
  Query& AddFilters(const Filters& filters);  // skipped when empty
  std::string Encode() const;

 private:
  std::vector<std::pair<std::string, std::string>> params_;
};

}  // namespace sandbox::docker
