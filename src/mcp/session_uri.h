// The URIs of files in sandbox sessions, as MCP resources:
//   sandbox://sessions/<session_id>/files/<path>
// <path> is the file's path relative to the session's working directory, each byte outside
// RFC 3986's unreserved set and "/" percent-encoded (%XX, upper-case hex); parsing accepts any
// percent-encoding, "%2F" included, and refuses malformed escapes and NUL. One-shot runs'
// files use sandbox://runs/<run_id>/files/<path> (embedded in the result only, never readable).
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandbox::mcp {

inline constexpr std::string_view kSessionUriPrefix = "sandbox://sessions/";
inline constexpr std::string_view kSessionFileTemplate =
    "sandbox://sessions/{session_id}/files/{path}";

// Percent-encodes every byte but A-Z a-z 0-9 - . _ ~ and "/".
std::string PercentEncodePath(std::string_view path);
// Decodes %XX escapes; nullopt for a malformed escape or a decoded NUL.
std::optional<std::string> PercentDecode(std::string_view text);

std::string SessionFileUri(std::string_view session_id, std::string_view path);

struct SessionFileRef {
  std::string session_id;
  std::string path;  // decoded
};
// nullopt unless `uri` is a well-formed session file URI (non-empty id of [A-Za-z0-9_-], a
// non-empty path).
std::optional<SessionFileRef> ParseSessionFileUri(std::string_view uri);

}  // namespace sandbox::mcp
