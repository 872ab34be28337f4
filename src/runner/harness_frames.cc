#include "sandbox/runner/harness_frames.h"

#include <string>

namespace sandbox::runner {

std::string EncodeFrame(FrameKind kind, std::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  auto n = static_cast<std::uint32_t>(payload.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>(kind));
  out.append(payload);
  return out;
}

Status FrameDecoder::Feed(std::string_view bytes) {
  if (error_) return *error_;
  buffer_.append(bytes);
  std::size_t pos = 0;
  while (buffer_.size() - pos >= 5) {
    const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + pos);
    std::size_t length = (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) |
                         (std::size_t{p[2]} << 8) | std::size_t{p[3]};
    char kind = static_cast<char>(p[4]);
    if (kind != wire::kFrameJson && kind != wire::kFrameStdout && kind != wire::kFrameStderr) {
      error_ = Error(ErrorCode::kProtocol,
                     "harness sent a frame of unknown kind " + std::to_string(int{p[4]}));
      return *error_;
    }
    if (length > max_frame_) {
      error_ = Error(ErrorCode::kProtocol, "harness sent a frame of " + std::to_string(length) +
                                               " bytes, more than the limit of " +
                                               std::to_string(max_frame_));
      return *error_;
    }
    if (buffer_.size() - pos - 5 < length) break;
    ready_.push_back(Frame{static_cast<FrameKind>(kind), buffer_.substr(pos + 5, length)});
    pos += 5 + length;
  }
  buffer_.erase(0, pos);
  return OkStatus();
}

bool FrameDecoder::Next(Frame& out) {
  if (ready_.empty()) return false;
  out = std::move(ready_.front());
  ready_.pop_front();
  return true;
}

}  // namespace sandbox::runner
