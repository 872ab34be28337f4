// AttachedStream: a live connection to a sandbox's stdin, stdout and stderr, as every engine
// gives one (Docker: a hijacked HTTP connection carrying its multiplexed frames; Kubernetes: a
// WebSocket with a channel byte per message). The harness's frames travel on stdin and stdout;
// its own diagnostics on stderr.
//
// Thread-safety: one reader thread (Read) and one writer thread (Write/CloseStdin) may use a
// stream concurrently. Close() may be called from any thread at any time (a cancelled start, an
// engine found lost). The destructor must not run while another thread is inside a method.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/engine/deadline.h"

namespace sandbox::engine {

enum class StreamKind { kStdout, kStderr };

std::string_view StreamKindName(StreamKind kind);

struct StreamChunk {
  StreamKind stream = StreamKind::kStdout;
  std::string data;

  friend bool operator==(const StreamChunk&, const StreamChunk&) = default;
};

class AttachedStream {
 public:
  virtual ~AttachedStream() = default;
  AttachedStream() = default;
  AttachedStream(const AttachedStream&) = delete;
  AttachedStream& operator=(const AttachedStream&) = delete;

  // Writes all of `bytes` to the sandbox's stdin. kInvalidArgument when stdin is not attached
  // or already closed, kTimeout at the deadline (some bytes may have been sent), kCancelled
  // after Close(), kUnavailable when the engine dropped the connection.
  virtual Status Write(std::string_view bytes, Deadline deadline) = 0;

  // The sandbox sees end of input on its stdin; output keeps flowing. Idempotent.
  virtual Status CloseStdin() = 0;

  // The next chunk of output, or nullopt at end of stream (the sandbox exited). kTimeout at the
  // deadline (the stream stays usable), kCancelled after Close(), kProtocol for a corrupt
  // stream, kUnavailable when the engine dropped the connection.
  virtual Result<std::optional<StreamChunk>> Read(Deadline deadline) = 0;

  // Wakes any blocked Read/Write, which return kCancelled, as will every later call. Any thread.
  virtual void Close() = 0;
};

}  // namespace sandbox::engine
