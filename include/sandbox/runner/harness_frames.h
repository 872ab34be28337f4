// The frame format between the server and the in-container harness (docs/harness-protocol.md):
// a u32 big-endian payload length, one kind byte, then the payload. Kinds: 'J' a JSON object,
// '1' bytes the run wrote to stdout, '2' bytes it wrote to stderr.
// Thread-safety: FrameDecoder has none (one per reader); the free functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/runner/harness_wire.h"

namespace sandbox::runner {

enum class FrameKind : char {
  kJson = wire::kFrameJson,
  kStdout = wire::kFrameStdout,
  kStderr = wire::kFrameStderr,
};

struct Frame {
  FrameKind kind = FrameKind::kJson;
  std::string payload;
};

std::string EncodeFrame(FrameKind kind, std::string_view payload);

class FrameDecoder {
 public:
  // A frame larger than this is a protocol error (the harness never sends one: images and
  // files are bounded far below it), so a broken stream cannot make the server allocate wildly.
  static constexpr std::size_t kDefaultMaxFrame = 96u << 20;

  explicit FrameDecoder(std::size_t max_frame = kDefaultMaxFrame) : max_frame_(max_frame) {}

  // Consumes bytes split at any position. An unknown kind or an oversized length fails with
  // kProtocol, and the error is sticky.
  Status Feed(std::string_view bytes);

  // Pops the next complete frame; false when none is ready.
  bool Next(Frame& out);

  // True when no frame is partially received.
  bool AtBoundary() const { return buffer_.empty(); }

 private:
  std::size_t max_frame_;
  std::string buffer_;
  std::deque<Frame> ready_;
  std::optional<Error> error_;
};

}  // namespace sandbox::runner
