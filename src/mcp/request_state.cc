#include "sandbox/mcp/request_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "sandbox/core/base64.h"
#include "sandbox/core/error.h"
#include "sandbox/core/sha256.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;

std::int64_t UnixMs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

Error Refused() {
  return Error(ErrorCode::kInvalidArgument,
               "requestState failed its integrity check (altered, issued to another client or "
               "tool, or expired): call the tool again without requestState");
}

}  // namespace

Result<std::string> ReadRequestStateKey(const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "the requestState key file " + path + " " + why);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return refuse("cannot be opened: " + ErrnoText(errno));
  struct stat info {};
  std::string key;
  std::string problem;
  if (::fstat(fd, &info) != 0) {
    problem = "cannot be examined: " + ErrnoText(errno);
  } else if (!S_ISREG(info.st_mode)) {
    problem = "is not a regular file";
  } else {
    key.resize(kMaxRequestStateKeyBytes + 1);  // one more: a longer file is refused below
    std::size_t got = 0;
    while (got < key.size()) {
      const ssize_t n = ::read(fd, key.data() + got, key.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = "cannot be read: " + ErrnoText(errno);
        break;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    key.resize(got);
  }
  ::close(fd);
  if (!problem.empty()) return refuse(problem);
  if (key.size() < kMinRequestStateKeyBytes || key.size() > kMaxRequestStateKeyBytes) {
    return refuse("holds " + std::to_string(key.size()) + " bytes; a key is " +
                  std::to_string(kMinRequestStateKeyBytes) + " to " +
                  std::to_string(kMaxRequestStateKeyBytes) +
                  " bytes (e.g. openssl rand -hex 32 > FILE)");
  }
  return key;
}

RequestStateSealer::RequestStateSealer(std::string key, std::chrono::seconds ttl, Clock now)
    : key_(std::move(key)), ttl_(ttl), now_(std::move(now)) {}

std::chrono::system_clock::time_point RequestStateSealer::Now() const {
  return now_ ? now_() : std::chrono::system_clock::now();
}

std::string RequestStateSealer::Seal(std::string_view principal, std::string_view tool,
                                     std::string_view state) const {
  json payload = {{"s", std::string(state)},
                  {"p", std::string(principal)},
                  {"t", std::string(tool)},
                  {"x", UnixMs(Now() + ttl_)}};
  std::string body = Base64Encode(payload.dump());
  return body + "." + HmacSha256Hex(key_, body);
}

Result<std::string> RequestStateSealer::Open(std::string_view principal, std::string_view tool,
                                             std::string_view sealed) const {
  auto dot = sealed.rfind('.');
  if (dot == std::string_view::npos) return Refused();
  std::string_view body = sealed.substr(0, dot);
  if (!ConstantTimeEquals(sealed.substr(dot + 1), HmacSha256Hex(key_, body))) return Refused();
  auto text = Base64Decode(body);
  if (!text.ok()) return Refused();
  json payload = json::parse(*text, nullptr, false);
  if (!payload.is_object() || !payload.contains("s") || !payload["s"].is_string() ||
      payload.value("p", "") != principal || payload.value("t", "") != tool ||
      !payload.contains("x") || !payload["x"].is_number_integer() ||
      payload["x"].get<std::int64_t>() < UnixMs(Now())) {
    return Refused();
  }
  return payload["s"].get<std::string>();
}

}  // namespace sandbox::mcp
