// Archive helpers for GET/PUT /containers/{id}/archive: a minimal ustar writer and reader for
// regular files (enough to put one file into a container or read one back), and PathStat, the
// decoded X-Docker-Container-Path-Stat header.
// Thread-safety: value types and pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"

namespace sandbox::docker {

struct TarEntry {
  std::string name;  // path inside the archive, e.g. "out/plot.png"
  std::string content;
  std::uint32_t mode = 0644;
  std::int64_t mtime = 0;  // seconds since the epoch
  char type = '0';         // '0' regular file, '5' directory (content empty)
};

// A ustar archive of regular files and directories (names up to 255 bytes, using the prefix
// field when over 100). Fails with kInvalidArgument for names that do not fit or other types.
Result<std::string> WriteTar(const std::vector<TarEntry>& entries);

// Convenience: an archive holding one regular file.
Result<std::string> TarSingleFile(std::string_view name, std::string_view content,
                                  std::uint32_t mode = 0644);

// Reads regular files and directories from a ustar/PAX/GNU archive (PAX "path" and GNU long
// names are honoured, links and devices skipped). Fails with kProtocol on a corrupt archive.
Result<std::vector<TarEntry>> ReadTar(std::string_view archive);

// The first regular file of `archive`; kNotFound when it has none.
Result<TarEntry> ExtractSingleFile(std::string_view archive);

// Stat of a path in a container, from the X-Docker-Container-Path-Stat header.
struct PathStat {
  std::string name;
  std::int64_t size = 0;
  std::uint32_t mode = 0;  // Go os.FileMode bits: permission bits plus type flags
  std::string mtime;       // RFC 3339 as sent by the engine
  std::string link_target;

  bool is_dir() const { return (mode & (1U << 31)) != 0; }
};

// Decodes the base64 JSON header value. kProtocol when malformed.
Result<PathStat> ParsePathStatHeader(std::string_view header_value);

}  // namespace sandbox::docker
