#include "sandbox/mcp/session_resources.h"

#include <charconv>
#include <cmath>
#include <ctime>

#include "sandbox/core/utf8.h"
#include "session_uri.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

// ISO 8601 in UTC, as the spec's annotations.lastModified wants.
std::string IsoTime(double unix_s) {
  if (!std::isfinite(unix_s) || unix_s <= 0) return {};
  const auto seconds = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return {};
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return {};
  return buf;
}

}  // namespace

Result<ResourcePage> SessionResourceProvider::List(const std::string& principal,
                                                   const std::string& cursor) {
  std::size_t offset = 0;
  if (!cursor.empty()) {
    auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + cursor.size(), offset);
    if (ec != std::errc() || end != cursor.data() + cursor.size()) {
      return Error(ErrorCode::kInvalidArgument, "cursor: unknown cursor");
    }
  }
  auto sessions = sessions_.List(principal);
  if (!sessions.ok()) return sessions.error();
  // The whole listing is rebuilt per page: a principal has a handful of sessions, and an
  // offset into a fresh listing stays valid however files come and go (at worst one shifts).
  ResourcePage page;
  std::size_t index = 0;
  for (const auto& session : *sessions) {
    if (session.busy) continue;
    auto files = sessions_.ListFiles(principal, session.id);
    if (!files.ok()) continue;  // ended or became busy meanwhile: nothing to show
    for (const auto& file : files->files) {
      if (index++ < offset) continue;
      if (page.resources.size() == options_.page_size) {
        page.next_cursor = std::to_string(offset + options_.page_size);
        return page;
      }
      const std::string mime =
          file.mime_type.empty() ? std::string("application/octet-stream") : file.mime_type;
      const std::string path = RepairUtf8(file.path);
      json resource = {{"uri", SessionFileUri(session.id, file.path)},
                       {"name", path},
                       {"title", path + " (session " + session.id.substr(0, 8) + ")"},
                       {"description", "File in sandbox session " + session.id + " (pool " +
                                           RepairUtf8(session.pool) + ")"},
                       {"mimeType", mime},
                       {"size", file.size}};
      if (auto modified = IsoTime(file.mtime_unix_s); !modified.empty()) {
        resource["annotations"] = {{"lastModified", modified}};
      }
      page.resources.push_back(std::move(resource));
    }
  }
  return page;
}

std::vector<json> SessionResourceProvider::Templates() const {
  return {{{"uriTemplate", std::string(kSessionFileTemplate)},
           {"name", "session-file"},
           {"title", "File in a sandbox session"},
           {"description",
            "A file in the working directory of one of your sandbox sessions (session_create). "
            "path is relative to the working directory, percent-encoded where needed."}}};
}

bool SessionResourceProvider::Owns(std::string_view uri) const {
  return uri.starts_with(kSessionUriPrefix);
}

Result<json> SessionResourceProvider::Read(const std::string& principal, const std::string& uri) {
  auto ref = ParseSessionFileUri(uri);
  if (!ref) {
    return Error(ErrorCode::kNotFound,
                 "not a session file URI (expected " + std::string(kSessionFileTemplate) + ")");
  }
  auto file = sessions_.GetFile(principal, ref->session_id, ref->path);
  if (!file.ok()) return file.error();
  return json::array({ResourceContents(uri, file->mime_type, file->data)});
}

}  // namespace sandbox::mcp
