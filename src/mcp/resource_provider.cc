#include "sandbox/mcp/resource_provider.h"

#include <charconv>

#include "sandbox/core/base64.h"
#include "sandbox/core/json_size.h"
#include "sandbox/core/utf8.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

bool IsTextMime(std::string_view mime) {
  return mime.starts_with("text/") || mime == "application/json" || mime.ends_with("+json") ||
         mime == "application/xml" || mime.ends_with("+xml") || mime == "application/javascript" ||
         mime == "application/x-python" || mime == "application/x-sh" ||
         mime == "application/toml" || mime == "application/yaml" || mime == "application/x-yaml" ||
         mime == "application/sql";
}

Error BadCursor(const std::string& cursor) {
  return Error(ErrorCode::kInvalidArgument,
               "cursor: unknown cursor \"" + RepairUtf8(cursor) +
                   "\" (pass a nextCursor from an earlier resources/list, or none)");
}

}  // namespace

bool IsTextContent(std::string_view mime_type, std::string_view data) {
  if (!IsValidUtf8(data)) return false;
  // Text full of control bytes would escape to up to six times its size; ordinary text (a
  // newline, a quote: two characters) to at most twice. Past that it goes as base64 (4/3).
  if (JsonEscapedBytes(data) > 2 * data.size() + 64) return false;
  if (IsTextMime(mime_type)) return true;
  // Unknown types: text files without a telling extension (README, Makefile) are common.
  const bool generic = mime_type.empty() || mime_type == "application/octet-stream";
  return generic && data.find('\0') == std::string_view::npos;
}

json ResourceContents(std::string_view uri, std::string_view mime_type, std::string_view data) {
  const std::string mime =
      mime_type.empty() ? std::string("application/octet-stream") : std::string(mime_type);
  json contents = {{"uri", uri}, {"mimeType", mime}};
  if (IsTextContent(mime_type, data)) {
    contents["text"] = std::string(data);
  } else {
    contents["blob"] = Base64Encode(data);
  }
  return contents;
}

void ResourceRegistry::Add(std::unique_ptr<ResourceProvider> provider) {
  providers_.push_back(std::move(provider));
}

Result<json> ResourceRegistry::List(const std::string& principal, const std::string& cursor) const {
  std::size_t index = 0;
  std::string inner;
  if (!cursor.empty()) {
    const auto dot = cursor.find('.');
    if (dot == std::string::npos) return BadCursor(cursor);
    const char* begin = cursor.data();
    auto [end, ec] = std::from_chars(begin, begin + dot, index);
    if (ec != std::errc() || end != begin + dot || index >= providers_.size()) {
      return BadCursor(cursor);
    }
    inner = cursor.substr(dot + 1);
  }
  json resources = json::array();
  for (; index < providers_.size(); ++index, inner.clear()) {
    auto page = providers_[index]->List(principal, inner);
    if (!page.ok()) {
      if (page.error().code() == ErrorCode::kInvalidArgument) return BadCursor(cursor);
      return page.error();
    }
    for (auto& resource : page->resources) resources.push_back(std::move(resource));
    if (!page->next_cursor.empty()) {
      return json{{"resources", std::move(resources)},
                  {"nextCursor", std::to_string(index) + "." + page->next_cursor}};
    }
    // A provider's last page: go on with the next provider unless this page has something.
    if (!resources.empty() && index + 1 < providers_.size()) {
      return json{{"resources", std::move(resources)},
                  {"nextCursor", std::to_string(index + 1) + "."}};
    }
  }
  return json{{"resources", std::move(resources)}};
}

json ResourceRegistry::Templates() const {
  json templates = json::array();
  for (const auto& provider : providers_) {
    for (auto& t : provider->Templates()) templates.push_back(std::move(t));
  }
  return json{{"resourceTemplates", std::move(templates)}};
}

Result<json> ResourceRegistry::Read(const std::string& principal, const std::string& uri) const {
  for (const auto& provider : providers_) {
    if (!provider->Owns(uri)) continue;
    auto contents = provider->Read(principal, uri);
    if (!contents.ok()) return contents.error();
    return json{{"contents", std::move(*contents)}};
  }
  return Error(ErrorCode::kNotFound, "no resource has this URI");
}

}  // namespace sandbox::mcp
