// Demuxer: splits Docker's multiplexed attach/logs stream into stdout and stderr chunks.
//
// Non-TTY streams are framed: an 8-byte header {type, 0, 0, 0, size as big-endian u32} and then
// `size` payload bytes; type 1 = stdout, 2 = stderr (0 = stdin is reported as stdout, as Docker's
// own stdcopy does; 3 = a daemon error, reported as a kEngine error carrying its text). Frames do
// not follow line boundaries and arrive split at arbitrary byte positions, so the demuxer is
// incremental: payload bytes are handed out as soon as they arrive (a 1 GiB frame costs no 1 GiB
// buffer), and only a partial 8-byte header is held back. TTY streams carry no framing: kRaw mode
// passes bytes through as stdout.
//
// Thread-safety: none; one Demuxer belongs to one reader.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"
#include "sandbox/engine/stream.h"

namespace sandbox::docker {

using engine::StreamChunk;
using engine::StreamKind;
using engine::StreamKindName;

class Demuxer {
 public:
  enum class Mode { kMultiplexed, kRaw };

  // The longest daemon-error (type 3) frame kept; the rest of its text is dropped.
  static constexpr std::size_t kMaxSystemErrorBytes = std::size_t{64} * 1024;

  explicit Demuxer(Mode mode = Mode::kMultiplexed) : mode_(mode) {}

  // Consumes `bytes` and appends the payload they complete to `out`; consecutive bytes of the same
  // stream within one call are merged into one chunk, empty frames produce nothing. A corrupt
  // header (nonzero padding or an unknown type) fails with kProtocol; a daemon error frame with
  // kEngine. Errors are sticky: later calls return the same error and append nothing. Chunks
  // decoded before the error in the same call are still appended.
  Status Feed(std::string_view bytes, std::vector<StreamChunk>& out);

  // True when no frame is partially received: at end of stream, false means it was truncated.
  bool AtFrameBoundary() const;

  Mode mode() const { return mode_; }

 private:
  enum class Target { kStdout, kStderr, kSystemError };

  void Emit(Target target, std::string_view data, std::vector<StreamChunk>& out);

  Mode mode_;
  std::array<unsigned char, 8> header_{};
  std::size_t header_len_ = 0;      // bytes of the current header received so far
  std::uint64_t payload_left_ = 0;  // bytes of the current frame's payload still to come
  Target target_ = Target::kStdout;
  std::string system_error_;
  bool merge_allowed_ = false;  // whether out.back() was appended by this Feed call
  std::optional<Error> error_;
};

}  // namespace sandbox::docker
