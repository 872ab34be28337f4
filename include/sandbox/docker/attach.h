// AttachedStream: a live attach to a container over a hijacked HTTP connection (the Docker
// engine's engine::AttachedStream), and the options of POST /containers/{id}/attach.
//
// With stdin the request carries "Connection: Upgrade / Upgrade: tcp" and the engine answers
// 101; without it there is no upgrade and the engine answers 200. Either way the engine then
// streams raw bytes on the same connection until the container exits, so both are driven the
// same way: libcurl connects (CURLOPT_CONNECT_ONLY, so TLS works too), the request and the answer
// head are written/read by hand with curl_easy_send/curl_easy_recv, and bytes after the head
// belong to the stream. libcurl is never asked to deliver a 101 to a write callback.
//
// Attach BEFORE starting the container: Client::Attach returns once the engine answered the head,
// i.e. once the attach is registered, so no early output is lost.
//
// Thread-safety: one reader thread (Read/ReadAll) and one writer thread (Write/CloseStdin) may use
// a stream concurrently; the curl calls are serialized by an internal mutex and all waiting happens
// outside it. Close() may be called from any thread at any time. The destructor must not run while
// another thread is inside a method.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/docker/deadline.h"
#include "sandbox/docker/demux.h"
#include "sandbox/docker/transport.h"
#include "sandbox/engine/stream.h"

namespace sandbox::docker {

struct AttachOptions {
  // Hijack both directions so Write() feeds the container's stdin. The container must have been
  // created with open_stdin (and attach_stdin); with stdin_once, CloseStdin() closes its stdin.
  bool attach_stdin = false;
  bool attach_stdout = true;
  bool attach_stderr = true;
  // The container has a TTY: the stream is raw bytes (all reported as stdout), not framed.
  bool tty = false;
  // Replay output the container produced before the attach.
  bool logs = false;
};

// Everything a container wrote, split by stream.
struct CollectedOutput {
  std::string stdout_data;
  std::string stderr_data;
  bool truncated = false;  // more than the byte limit arrived; the excess was dropped
};

class AttachedStream final : public engine::AttachedStream {
 public:
  ~AttachedStream() override;

  // Writes all of `bytes` to the container's stdin. kInvalidArgument when stdin is not attached or
  // already closed, kTimeout at the deadline (some bytes may have been sent), kCancelled after
  // Close(), kUnavailable when the engine dropped the connection.
  Status Write(std::string_view bytes, Deadline deadline) override;

  // Half-closes the connection (shutdown(fd, SHUT_WR)): the container sees end of input on its
  // stdin. Output keeps flowing. Idempotent.
  Status CloseStdin() override;

  // The next chunk of output, or nullopt at end of stream (the container exited and the engine
  // closed the connection). kTimeout at the deadline (the stream stays usable), kCancelled after
  // Close(), kProtocol for a corrupt or truncated frame stream.
  Result<std::optional<StreamChunk>> Read(Deadline deadline) override;

  // Reads to end of stream, keeping at most `max_bytes` of output (stdout + stderr).
  Result<CollectedOutput> ReadAll(Deadline deadline,
                                  std::size_t max_bytes = std::size_t{16} * 1024 * 1024);

  // Wakes any blocked Read/Write, which return kCancelled, as will every later call. Any thread.
  void Close() override;

  // The connection's socket, for callers that poll() it for readability before calling Read.
  // Do not read or write it directly: with TLS the bytes on it are encrypted, and Read may hold
  // buffered data. Valid until destruction.
  int fd() const;

  // Internal: use Client::Attach.
  static Result<std::unique_ptr<AttachedStream>> Open(const Transport& transport,
                                                      const std::string& target,
                                                      const AttachOptions& options,
                                                      Deadline deadline);

 private:
  struct State;
  explicit AttachedStream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace sandbox::docker
