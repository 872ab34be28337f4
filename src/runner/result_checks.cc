#include "sandbox/runner/result_checks.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "sandbox/core/json.h"
#include "sandbox/runner/harness_wire.h"

namespace sandbox::runner {
namespace {

using nlohmann::json;

// Length of the valid UTF-8 sequence at s[i], 0 if there is none (overlong forms, surrogates
// and code points above U+10FFFF are invalid).
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string JsonText(const json& j, std::string_view key, std::size_t max_bytes) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? CutText(it->get<std::string>(), max_bytes)
                                          : std::string();
}

exec::TracebackFrame OmittedFrame(std::int64_t n) {
  return exec::TracebackFrame{"", 0, "[... " + std::to_string(n) + " frames omitted ...]"};
}

// A marker frame of an earlier bounding (the harness's): the number of frames it stands for.
std::optional<std::int64_t> OmittedCount(const exec::TracebackFrame& f) {
  static const std::regex kMarker(R"(\[\.\.\. (\d{1,18}) frames omitted \.\.\.\])");
  std::smatch m;
  if (!f.file.empty() || f.line != 0 || !std::regex_match(f.function, m, kMarker)) {
    return std::nullopt;
  }
  return std::stoll(m[1].str());
}

std::size_t ApproxBytes(const exec::Traceback& tb) {
  std::size_t n = tb.type.size() + tb.message.size() + 64;
  for (const auto& f : tb.frames) n += f.file.size() + f.function.size() + 48;
  return n;
}

}  // namespace

std::string ResultPathError(std::string_view path, const ResultLimits& limits) {
  if (path.empty()) return "empty";
  if (path.size() > limits.path_max_bytes) {
    return "longer than " + std::to_string(limits.path_max_bytes) + " bytes";
  }
  for (std::size_t i = 0; i < path.size();) {
    const std::size_t n = Utf8SequenceLength(path, i);
    if (n == 0) return "not valid UTF-8";
    const auto c = static_cast<unsigned char>(path[i]);
    if (n == 1 && (c < 0x20 || c == 0x7F)) return "contains a control character";
    i += n;
  }
  if (path.front() == '/') return "absolute";
  std::size_t start = 0;
  while (true) {
    const std::size_t end = path.find('/', start);
    const std::string_view part =
        path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (part.empty() || part == "." || part == "..") {
      return "not normalized (empty, '.' or '..' component)";
    }
    if (part.size() > limits.name_max_bytes) {
      return "has a component longer than " + std::to_string(limits.name_max_bytes) + " bytes";
    }
    if (end == std::string_view::npos) return "";
    start = end + 1;
  }
}

std::string MimeTypeError(std::string_view mime_type) {
  constexpr std::size_t kMaxName = 127;
  auto name_error = [](std::string_view name) -> std::string {
    if (name.empty()) return "has an empty type or subtype";
    if (name.size() > kMaxName) return "has a type or subtype longer than 127 bytes";
    const auto alnum = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    if (!alnum(name.front())) return "has a type or subtype not starting with a letter or digit";
    for (const char c : name) {
      if (!alnum(c) && std::string_view("!#$&-^_.+").find(c) == std::string_view::npos) {
        return "holds a character outside RFC 6838's restricted names";
      }
    }
    return "";
  };
  const std::size_t slash = mime_type.find('/');
  if (slash == std::string_view::npos) return "is not type/subtype";
  if (auto bad = name_error(mime_type.substr(0, slash)); !bad.empty()) return bad;
  return name_error(mime_type.substr(slash + 1));
}

std::string CheckedMimeType(std::string_view claimed) {
  return MimeTypeError(claimed).empty() ? std::string(claimed)
                                        : std::string("application/octet-stream");
}

std::string InputPathError(std::string_view path, std::string* normalized,
                           const ResultLimits& limits) {
  if (path.empty()) return "must not be empty";
  if (path.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (path.front() == '/') return "must be relative to the work dir, got an absolute path";
  if (path.size() > limits.path_max_bytes) {
    return "longer than " + std::to_string(limits.path_max_bytes) + " bytes";
  }
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return "must not contain \"..\"";
    if (part.size() > limits.name_max_bytes) {
      return "has a component longer than " + std::to_string(limits.name_max_bytes) + " bytes";
    }
    if (!out.empty()) out += '/';
    out.append(part);
  }
  if (out.empty()) return "names no file";
  if (normalized != nullptr) *normalized = std::move(out);
  return "";
}

std::string CutText(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  auto marker = [](std::size_t n) { return " [... " + std::to_string(n) + " bytes omitted]"; };
  const std::size_t room =
      max_bytes > marker(text.size()).size() ? max_bytes - marker(text.size()).size() : 0;
  // Back up to a character boundary (never inside a UTF-8 sequence).
  std::size_t keep = room;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  return std::string(text.substr(0, keep)) + marker(text.size() - keep);
}

exec::Traceback BoundedTraceback(const json& j, const ResultLimits& limits) {
  namespace t = wire::traceback;
  namespace tf = wire::traceback_frame;
  exec::Traceback tb;
  tb.type = JsonText(j, t::kType, limits.traceback_max_name_bytes);
  tb.message = JsonText(j, t::kMessage, limits.traceback_max_message_bytes);
  std::vector<exec::TracebackFrame> real;
  std::int64_t omitted = 0;
  std::optional<std::size_t> marker_at;  // real frames before the first marker
  if (auto it = j.find(t::kFrames); it != j.end() && it->is_array()) {
    for (const auto& f : *it) {
      if (!f.is_object()) continue;
      exec::TracebackFrame frame;
      frame.file = JsonText(f, tf::kFile, limits.traceback_max_name_bytes);
      auto line = f.find(tf::kLine);
      auto number = line != f.end() ? JsonInteger(*line) : std::nullopt;
      frame.line = number && *number > 0 && *number <= std::numeric_limits<int>::max()
                       ? static_cast<int>(*number)
                       : 0;
      frame.function = JsonText(f, tf::kFunction, limits.traceback_max_name_bytes);
      if (auto n = OmittedCount(frame)) {
        omitted += *n;
        if (!marker_at) marker_at = real.size();
        continue;
      }
      real.push_back(std::move(frame));
    }
  }
  const auto max_frames = static_cast<std::size_t>(std::max(limits.traceback_max_frames, 2));
  std::size_t head = max_frames / 2;
  std::size_t tail = max_frames - head - 1;
  while (true) {
    tb.frames.clear();
    if (!marker_at && head + tail >= real.size()) {
      tb.frames = real;
    } else {
      std::size_t h = std::min(head, real.size());
      std::size_t t = std::min(tail, real.size() - h);
      if (head + tail >= real.size()) {  // nothing more to omit: the marker stays where it was
        h = *marker_at;
        t = real.size() - h;
      }
      tb.frames.assign(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(h));
      tb.frames.push_back(OmittedFrame(static_cast<std::int64_t>(real.size() - h - t) + omitted));
      tb.frames.insert(tb.frames.end(), real.end() - static_cast<std::ptrdiff_t>(t), real.end());
    }
    if (ApproxBytes(tb) <= limits.traceback_max_total_bytes || head + tail == 0) return tb;
    head /= 2;
    tail /= 2;
  }
}

}  // namespace sandbox::runner
