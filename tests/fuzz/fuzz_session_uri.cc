// The session resource URI parser (mcp/session_uri.h). Properties:
//   - ParseSessionFileUri accepts only a non-empty id of [A-Za-z0-9_-] and a non-empty path
//     without NUL, and the URI built back from what it parsed parses to the same reference;
//   - PercentDecode(PercentEncodePath(p)) == p for every NUL-free p, and the encoding uses
//     only unreserved characters, "/" and upper-case %XX escapes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "mcp/session_uri.h"

namespace {

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

bool IsEncodedChar(char c) {
  return IsIdChar(c) || c == '.' || c == '~' || c == '/' || c == '%' || (c >= 'A' && c <= 'F');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  using sandbox::mcp::kSessionUriPrefix;

  // The input as a URI, and with the prefix prepended so the fuzzer need not find it.
  for (const std::string& uri :
       {std::string(input), std::string(kSessionUriPrefix) + std::string(input)}) {
    auto ref = sandbox::mcp::ParseSessionFileUri(uri);
    if (!ref) continue;
    FUZZ_CHECK(uri.starts_with(kSessionUriPrefix), "prefix");
    FUZZ_CHECK(!ref->session_id.empty(), "non-empty id");
    for (char c : ref->session_id) FUZZ_CHECK(IsIdChar(c), "id characters");
    FUZZ_CHECK(!ref->path.empty(), "non-empty path");
    FUZZ_CHECK(ref->path.find('\0') == std::string::npos, "no NUL in the path");
    const std::string again = sandbox::mcp::SessionFileUri(ref->session_id, ref->path);
    auto reparsed = sandbox::mcp::ParseSessionFileUri(again);
    FUZZ_CHECK(reparsed && reparsed->session_id == ref->session_id && reparsed->path == ref->path,
               "the URI built from a parsed reference parses back to it");
  }

  const std::string encoded = sandbox::mcp::PercentEncodePath(input);
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    FUZZ_CHECK(IsEncodedChar(encoded[i]), "encoded characters");
    if (encoded[i] == '%') FUZZ_CHECK(i + 2 < encoded.size(), "a whole escape");
  }
  auto decoded = sandbox::mcp::PercentDecode(encoded);
  if (input.find('\0') == std::string_view::npos) {
    FUZZ_CHECK(decoded && *decoded == input, "decode(encode(p)) == p");
  } else {
    FUZZ_CHECK(!decoded, "NUL is refused");
  }
  auto raw = sandbox::mcp::PercentDecode(input);
  if (raw) {
    FUZZ_CHECK(raw->size() <= input.size(), "decoding never grows");
    FUZZ_CHECK(raw->find('\0') == std::string::npos, "no NUL after decoding");
  }
  return 0;
}
