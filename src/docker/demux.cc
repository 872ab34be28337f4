#include "sandbox/docker/demux.h"

#include <algorithm>
#include <cstdio>

namespace sandbox::docker {

void Demuxer::Emit(Target target, std::string_view data, std::vector<StreamChunk>& out) {
  if (data.empty()) return;
  if (target == Target::kSystemError) {
    std::size_t room = kMaxSystemErrorBytes - std::min(kMaxSystemErrorBytes, system_error_.size());
    system_error_.append(data.substr(0, room));
    return;
  }
  StreamKind kind = target == Target::kStderr ? StreamKind::kStderr : StreamKind::kStdout;
  if (!out.empty() && out.back().stream == kind && merge_allowed_) {
    out.back().data.append(data);
  } else {
    out.push_back(StreamChunk{kind, std::string(data)});
  }
  merge_allowed_ = true;
}

Status Demuxer::Feed(std::string_view bytes, std::vector<StreamChunk>& out) {
  if (error_) return *error_;
  merge_allowed_ = false;  // never append to chunks the caller got from an earlier call
  if (mode_ == Mode::kRaw) {
    Emit(Target::kStdout, bytes, out);
    return OkStatus();
  }
  while (!bytes.empty()) {
    if (payload_left_ > 0) {
      std::size_t take = static_cast<std::size_t>(
          std::min<std::uint64_t>(payload_left_, static_cast<std::uint64_t>(bytes.size())));
      Emit(target_, bytes.substr(0, take), out);
      bytes.remove_prefix(take);
      payload_left_ -= take;
    } else {
      std::size_t take = std::min(header_.size() - header_len_, bytes.size());
      std::copy_n(bytes.begin(), take, header_.begin() + static_cast<std::ptrdiff_t>(header_len_));
      header_len_ += take;
      bytes.remove_prefix(take);
      if (header_len_ < header_.size()) break;
      header_len_ = 0;
      if (header_[1] != 0 || header_[2] != 0 || header_[3] != 0 || header_[0] > 3) {
        char hex[64];
        std::snprintf(hex, sizeof(hex), "%02x %02x %02x %02x %02x %02x %02x %02x", header_[0],
                      header_[1], header_[2], header_[3], header_[4], header_[5], header_[6],
                      header_[7]);
        error_ =
            Error(ErrorCode::kProtocol, std::string("corrupt Docker stream frame header: ") + hex +
                                            " (is the container a TTY? then use raw mode)");
        return *error_;
      }
      switch (header_[0]) {
        case 2:
          target_ = Target::kStderr;
          break;
        case 3:
          target_ = Target::kSystemError;
          break;
        default:
          target_ = Target::kStdout;
          break;
      }
      payload_left_ = (std::uint64_t{header_[4]} << 24) | (std::uint64_t{header_[5]} << 16) |
                      (std::uint64_t{header_[6]} << 8) | std::uint64_t{header_[7]};
    }
    if (payload_left_ == 0 && header_len_ == 0 && target_ == Target::kSystemError) {
      error_ = Error(ErrorCode::kEngine, "Docker engine reported a stream error: " + system_error_);
      return *error_;
    }
  }
  return OkStatus();
}

bool Demuxer::AtFrameBoundary() const {
  return mode_ == Mode::kRaw || (header_len_ == 0 && payload_left_ == 0);
}

}  // namespace sandbox::docker
