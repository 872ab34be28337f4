// The engine client's parsers of raw engine bytes on a hijacked attach connection
// (docker/attach.cc): the HTTP answer head (ParseResponseHead), reassembled as AttachedStream::Open
// does it from reads that end anywhere, then the multiplexed stream (Demuxer) fed in
// fuzzer-chosen pieces. (Ordinary engine calls and the event stream are read by libcurl, which
// does the chunked decoding; its parsers are not this project's code.)
// Properties:
//   - the head is found exactly when the bytes hold "\r\n\r\n", its length ends there, and the
//     result does not depend on how the reads were cut or on the bytes after it;
//   - Demuxer output is the same for every way of cutting the stream, equals an independent
//     whole-buffer frame parser, never holds an empty chunk, and its errors are sticky;
//   - raw (TTY) mode passes the bytes through unchanged.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "sandbox/docker/demux.h"
#include "sandbox/docker/transport.h"

namespace {

using sandbox::ErrorCode;
using sandbox::docker::Demuxer;
using sandbox::docker::StreamChunk;
using sandbox::docker::StreamKind;

struct Outcome {
  std::string sequence;  // "1:<bytes>2:<bytes>" with adjacent chunks of one stream merged
  std::string out;
  std::string err;
  std::optional<sandbox::Error> error;
  bool boundary = true;
  std::optional<StreamKind> last;  // the stream of the last byte in `sequence`
};

void Append(Outcome& o, StreamKind kind, std::string_view data) {
  if (o.last != kind) o.sequence += kind == StreamKind::kStdout ? "1:" : "2:";
  o.last = kind;
  o.sequence.append(data);
  (kind == StreamKind::kStdout ? o.out : o.err).append(data);
}

// Feeds `bytes` in pieces of the given sizes (the remainder last).
Outcome Demux(Demuxer::Mode mode, std::string_view bytes, const std::vector<std::size_t>& cuts) {
  Demuxer demuxer(mode);
  Outcome o;
  std::vector<std::string_view> pieces;
  for (std::size_t cut : cuts) {
    const std::size_t take = std::min(cut, bytes.size());
    pieces.push_back(bytes.substr(0, take));
    bytes.remove_prefix(take);
  }
  pieces.push_back(bytes);
  for (std::string_view piece : pieces) {
    std::vector<StreamChunk> chunks;
    auto status = demuxer.Feed(piece, chunks);
    for (const auto& c : chunks) {
      FUZZ_CHECK(!c.data.empty(), "no empty chunks");
      if (o.error) FUZZ_CHECK(false, "nothing is appended after an error");
      Append(o, c.stream, c.data);
    }
    if (!status.ok()) {
      if (o.error) {
        FUZZ_CHECK(status.error().message() == o.error->message(), "errors are sticky");
      }
      o.error = status.error();
    }
  }
  o.boundary = demuxer.AtFrameBoundary();
  return o;
}

// An independent reading of the multiplexed format over the whole buffer.
Outcome Reference(std::string_view bytes) {
  Outcome o;
  std::string system_error;
  while (true) {
    if (bytes.empty()) return o;
    if (bytes.size() < 8) {
      o.boundary = false;
      return o;
    }
    const auto* h = reinterpret_cast<const unsigned char*>(bytes.data());  // NOLINT
    if (h[1] != 0 || h[2] != 0 || h[3] != 0 || h[0] > 3) {
      o.error = sandbox::Error(ErrorCode::kProtocol, "corrupt");
      return o;
    }
    const std::uint64_t length = (std::uint64_t{h[4]} << 24) | (std::uint64_t{h[5]} << 16) |
                                 (std::uint64_t{h[6]} << 8) | h[7];
    bytes.remove_prefix(8);
    const std::size_t take =
        static_cast<std::size_t>(std::min<std::uint64_t>(length, bytes.size()));
    const std::string_view payload = bytes.substr(0, take);
    bytes.remove_prefix(take);
    if (h[0] == 3) {
      system_error.append(payload);
      if (take < length) {
        o.boundary = false;
        return o;
      }
      o.error = sandbox::Error(ErrorCode::kEngine, system_error);
      return o;
    }
    if (!payload.empty()) Append(o, h[0] == 2 ? StreamKind::kStderr : StreamKind::kStdout, payload);
    if (take < length) {
      o.boundary = false;
      return o;
    }
  }
}

void CheckDemux(std::string_view bytes, const std::vector<std::size_t>& cuts) {
  const Outcome whole = Demux(Demuxer::Mode::kMultiplexed, bytes, {});
  const Outcome cut = Demux(Demuxer::Mode::kMultiplexed, bytes, cuts);
  FUZZ_CHECK(whole.sequence == cut.sequence, "the same output however the stream is cut");
  FUZZ_CHECK(whole.error.has_value() == cut.error.has_value(), "the same failure");
  if (whole.error) {
    FUZZ_CHECK(whole.error->message() == cut.error->message(), "the same error");
  } else {
    FUZZ_CHECK(whole.boundary == cut.boundary, "the same frame boundary");
  }
  const Outcome ref = Reference(bytes);
  FUZZ_CHECK(whole.sequence == ref.sequence, "agrees with the reference parser");
  FUZZ_CHECK(whole.error.has_value() == ref.error.has_value(), "fails where the reference does");
  if (ref.error) {
    FUZZ_CHECK(whole.error->code() == ref.error->code(), "the reference's error kind");
    if (ref.error->code() == ErrorCode::kEngine) {
      const std::string expected = ref.error->message().substr(0, Demuxer::kMaxSystemErrorBytes);
      FUZZ_CHECK(whole.error->message().ends_with(expected), "the daemon's error text");
    }
  } else {
    FUZZ_CHECK(whole.boundary == ref.boundary, "the reference's frame boundary");
  }
  FUZZ_CHECK(whole.out.size() + whole.err.size() <= bytes.size(), "never more than came in");

  const Outcome raw = Demux(Demuxer::Mode::kRaw, bytes, cuts);
  FUZZ_CHECK(!raw.error && raw.err.empty() && raw.out == bytes, "raw mode passes bytes through");
}

// Reads the head as AttachedStream::Open does, one piece at a time; returns the bytes after it.
void CheckHead(std::string_view bytes, const std::vector<std::size_t>& cuts) {
  std::string buffer;
  std::size_t consumed = 0;
  std::optional<sandbox::docker::ResponseHead> head;
  std::optional<sandbox::Error> error;
  std::vector<std::size_t> reads = cuts;
  reads.push_back(bytes.size());
  for (std::size_t n : reads) {
    const std::size_t take = std::min(n, bytes.size() - consumed);
    buffer.append(bytes.substr(consumed, take));
    consumed += take;
    auto parsed = sandbox::docker::ParseResponseHead(buffer);
    if (!parsed.ok()) {
      error = parsed.error();
      break;
    }
    head = std::move(*parsed);
    if (head) break;
    FUZZ_CHECK(buffer.find("\r\n\r\n") == std::string::npos, "a whole head is found");
    if (consumed == bytes.size()) break;
  }
  const std::size_t end = buffer.find("\r\n\r\n");
  if (error) {
    FUZZ_CHECK(error->code() == ErrorCode::kProtocol, "a broken head is a protocol error");
    FUZZ_CHECK(!error->message().empty(), "says why");
    return;
  }
  if (!head) return;
  FUZZ_CHECK(end != std::string::npos && head->length == end + 4,
             "the head ends at the blank line");
  FUZZ_CHECK(head->status >= 0 && head->status <= 999, "a three-digit status");
  // The same head when all bytes were there at once.
  auto again = sandbox::docker::ParseResponseHead(bytes);
  FUZZ_CHECK(again.ok() && again->has_value(), "the whole buffer parses too");
  FUZZ_CHECK((*again)->status == head->status && (*again)->length == head->length &&
                 (*again)->headers == head->headers,
             "independent of how reads were cut and of what follows");
  for (const auto& [name, value] : head->headers) {
    for (char c : name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'), "header names are lower-cased");
  }
  // What follows is the stream (AttachedStream::Open feeds it to the demuxer).
  CheckDemux(bytes.substr(head->length), cuts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  const bool with_head = fdp.ConsumeBool();
  std::vector<std::size_t> cuts(fdp.ConsumeIntegralInRange<std::size_t>(0, 16));
  for (auto& cut : cuts) cut = fdp.ConsumeIntegralInRange<std::size_t>(0, 64);
  const std::string bytes = fdp.ConsumeRemainingBytesAsString();
  if (with_head) {
    CheckHead(bytes, cuts);
  } else {
    CheckDemux(bytes, cuts);
  }
  return 0;
}
