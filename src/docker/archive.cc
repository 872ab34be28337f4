#include "sandbox/docker/archive.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "sandbox/core/base64.h"
#include "sandbox/core/json.h"

namespace sandbox::docker {
namespace {

constexpr std::size_t kBlock = 512;

// Writes `value` as zero-padded octal into field [offset, offset+width) with a NUL terminator.
bool PutOctal(std::string& block, std::size_t offset, std::size_t width, std::uint64_t value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + (value & 7)));
    value >>= 3;
  } while (value != 0);
  if (digits.size() > width - 1) return false;
  digits.insert(digits.begin(), width - 1 - digits.size(), '0');
  std::copy(digits.begin(), digits.end(), block.begin() + static_cast<std::ptrdiff_t>(offset));
  block[offset + width - 1] = '\0';
  return true;
}

void PutString(std::string& block, std::size_t offset, std::string_view s) {
  std::copy(s.begin(), s.end(), block.begin() + static_cast<std::ptrdiff_t>(offset));
}

std::uint64_t Checksum(std::string_view block) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    sum += (i >= 148 && i < 156) ? std::uint64_t{' '} : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

// The NUL-terminated string in field [offset, offset+width).
std::string_view GetString(std::string_view block, std::size_t offset, std::size_t width) {
  std::string_view field = block.substr(offset, width);
  return field.substr(0, std::min(field.find('\0'), field.size()));
}

bool GetOctal(std::string_view block, std::size_t offset, std::size_t width, std::uint64_t& out) {
  std::string_view field = block.substr(offset, width);
  out = 0;
  bool any = false;
  for (char c : field) {
    if (c == '\0' || c == ' ') {
      if (any) break;
      continue;
    }
    if (c < '0' || c > '7') return false;
    if (out > (UINT64_MAX >> 3)) return false;
    out = (out << 3) | static_cast<std::uint64_t>(c - '0');
    any = true;
  }
  return true;
}

std::size_t Padded(std::uint64_t size) {
  return static_cast<std::size_t>((size + kBlock - 1) / kBlock * kBlock);
}

Error Corrupt(std::string_view why) {
  return Error(ErrorCode::kProtocol, "corrupt tar archive: " + std::string(why));
}

// Parses PAX records "LEN key=value\n" and returns the value of "path", if any.
std::string PaxPath(std::string_view records) {
  std::string path;
  while (!records.empty()) {
    auto space = records.find(' ');
    if (space == std::string_view::npos) break;
    std::size_t len = 0;
    for (char c : records.substr(0, space)) {
      if (c < '0' || c > '9') return path;
      len = len * 10 + static_cast<std::size_t>(c - '0');
    }
    if (len <= space || len > records.size()) break;
    std::string_view record = records.substr(space + 1, len - space - 1);
    if (!record.empty() && record.back() == '\n') record.remove_suffix(1);
    auto eq = record.find('=');
    if (eq != std::string_view::npos && record.substr(0, eq) == "path") {
      path = std::string(record.substr(eq + 1));
    }
    records.remove_prefix(len);
  }
  return path;
}

}  // namespace

Result<std::string> WriteTar(const std::vector<TarEntry>& entries) {
  std::string out;
  for (const auto& e : entries) {
    if (e.type != '0' && e.type != '5') {
      return Error(ErrorCode::kInvalidArgument, "tar writer supports files and directories only");
    }
    std::string name = e.name;
    if (e.type == '5' && (name.empty() || name.back() != '/')) name += '/';
    std::string prefix;
    if (name.empty()) return Error(ErrorCode::kInvalidArgument, "tar entry without a name");
    if (name.size() > 100) {
      // Split at a '/' so that the prefix fits 155 bytes and the rest 100.
      auto slash = name.rfind('/', std::min<std::size_t>(155, name.size() - 2));
      if (slash == std::string::npos || name.size() - slash - 1 > 100 || slash == 0) {
        return Error(ErrorCode::kInvalidArgument, "tar entry name too long for ustar: " + name);
      }
      prefix = name.substr(0, slash);
      name = name.substr(slash + 1);
    }
    std::string header(kBlock, '\0');
    PutString(header, 0, name);
    std::uint64_t size = e.type == '0' ? e.content.size() : 0;
    bool ok =
        PutOctal(header, 100, 8, e.mode & 07777) && PutOctal(header, 108, 8, 0) &&
        PutOctal(header, 116, 8, 0) && PutOctal(header, 124, 12, size) &&
        PutOctal(header, 136, 12, static_cast<std::uint64_t>(std::max<std::int64_t>(0, e.mtime)));
    if (!ok) return Error(ErrorCode::kInvalidArgument, "tar entry too large: " + e.name);
    header[156] = e.type;
    PutString(header, 257, std::string_view("ustar\0", 6));
    PutString(header, 263, "00");
    PutString(header, 345, prefix);
    char sum[8];
    std::snprintf(sum, sizeof(sum), "%06llo", static_cast<unsigned long long>(Checksum(header)));
    PutString(header, 148, std::string_view(sum, 7));  // six digits, NUL, then the space kept
    header[155] = ' ';
    out += header;
    if (e.type == '0') {
      out += e.content;
      out.append(Padded(e.content.size()) - e.content.size(), '\0');
    }
  }
  out.append(2 * kBlock, '\0');
  return out;
}

Result<std::string> TarSingleFile(std::string_view name, std::string_view content,
                                  std::uint32_t mode) {
  return WriteTar({TarEntry{std::string(name), std::string(content), mode, 0, '0'}});
}

Result<std::vector<TarEntry>> ReadTar(std::string_view archive) {
  std::vector<TarEntry> entries;
  std::string long_name;
  std::size_t pos = 0;
  while (pos + kBlock <= archive.size()) {
    std::string_view header = archive.substr(pos, kBlock);
    if (std::all_of(header.begin(), header.end(), [](char c) { return c == '\0'; })) {
      return entries;  // end-of-archive marker
    }
    std::uint64_t stored_sum = 0, size = 0, mode = 0, mtime = 0;
    if (!GetOctal(header, 148, 8, stored_sum) || stored_sum != Checksum(header)) {
      return Corrupt("bad header checksum at offset " + std::to_string(pos));
    }
    if (!GetOctal(header, 124, 12, size)) return Corrupt("bad size field");
    GetOctal(header, 100, 8, mode);
    GetOctal(header, 136, 12, mtime);
    char type = header[156];
    pos += kBlock;
    if (size > archive.size() - pos) return Corrupt("entry runs past the end");
    std::string_view data = archive.substr(pos, static_cast<std::size_t>(size));
    pos += std::min(Padded(size), archive.size() - pos);

    if (type == 'x') {
      long_name = PaxPath(data);
      continue;
    }
    if (type == 'L') {
      long_name = std::string(data.substr(0, std::min(data.find('\0'), data.size())));
      continue;
    }
    if (type == 'g') continue;
    std::string name;
    if (!long_name.empty()) {
      name = std::move(long_name);
      long_name.clear();
    } else {
      std::string_view prefix = GetString(header, 345, 155);
      name = prefix.empty() ? std::string(GetString(header, 0, 100))
                            : std::string(prefix) + "/" + std::string(GetString(header, 0, 100));
    }
    if (type == '0' || type == '\0' || type == '5') {
      TarEntry e;
      e.name = std::move(name);
      e.type = type == '5' ? '5' : '0';
      if (e.type == '0') e.content = std::string(data);
      e.mode = static_cast<std::uint32_t>(mode & 07777);
      e.mtime = static_cast<std::int64_t>(mtime);
      entries.push_back(std::move(e));
    }
  }
  if (pos != archive.size() && !entries.empty()) return Corrupt("trailing partial block");
  if (entries.empty() && !archive.empty()) return Corrupt("no complete header");
  return entries;
}

Result<TarEntry> ExtractSingleFile(std::string_view archive) {
  auto entries = ReadTar(archive);
  if (!entries.ok()) return entries.error();
  for (auto& e : *entries) {
    if (e.type == '0') return std::move(e);
  }
  return Error(ErrorCode::kNotFound, "tar archive holds no regular file");
}

Result<PathStat> ParsePathStatHeader(std::string_view header_value) {
  auto decoded = Base64Decode(header_value);
  if (!decoded.ok()) {
    return Error(ErrorCode::kProtocol,
                 "X-Docker-Container-Path-Stat is not base64: " + decoded.error().message());
  }
  auto parsed = ParseJson(*decoded);
  if (!parsed.ok() || !parsed->is_object()) {
    return Error(ErrorCode::kProtocol, "X-Docker-Container-Path-Stat is not a JSON object");
  }
  const nlohmann::json& j = *parsed;
  // Members of another type count as absent: json::value() would throw out of the caller.
  auto text = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto integer = [&j](const char* key) -> std::int64_t {
    auto it = j.find(key);
    return it != j.end() ? JsonInteger(*it).value_or(0) : 0;
  };
  PathStat st;
  st.name = text("name");
  st.size = integer("size");
  const std::int64_t mode = integer("mode");
  st.mode = mode >= 0 && mode <= UINT32_MAX ? static_cast<std::uint32_t>(mode) : 0;
  st.mtime = text("mtime");
  st.link_target = text("linkTarget");
  return st;
}

}  // namespace sandbox::docker
