// The harness frame decoder (runner/harness_frames.h), fed in fuzzer-chosen pieces with a
// fuzzer-chosen frame limit. Properties:
//   - the frames (and the failure) do not depend on how the bytes were cut;
//   - re-encoding the decoded frames gives back exactly the bytes they were decoded from, and
//     AtBoundary() says whether bytes of a partial frame are left;
//   - a failure happens exactly at an unknown kind or a length above the limit, and is sticky.
// The harness's JSON messages are decoded by runner/harness_protocol.h's DecodeEvent (covered by
// runner_unit_test; not fuzzed here).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "sandbox/runner/harness_frames.h"

namespace {

using sandbox::runner::EncodeFrame;
using sandbox::runner::Frame;
using sandbox::runner::FrameDecoder;

struct Decoded {
  std::string reencoded;
  std::optional<std::string> error;
  bool boundary = true;
};

Decoded Decode(std::size_t max_frame, std::string_view bytes,
               const std::vector<std::size_t>& cuts) {
  FrameDecoder decoder(max_frame);
  Decoded d;
  auto feed = [&](std::string_view piece) {
    auto status = decoder.Feed(piece);
    if (!status.ok()) {
      if (d.error) FUZZ_CHECK(*d.error == status.error().message(), "errors are sticky");
      d.error = status.error().message();
    }
    Frame f;
    while (decoder.Next(f)) {
      FUZZ_CHECK(f.payload.size() <= max_frame, "no frame above the limit");
      d.reencoded += EncodeFrame(f.kind, f.payload);
    }
  };
  for (std::size_t cut : cuts) {
    const std::size_t take = std::min(cut, bytes.size());
    feed(bytes.substr(0, take));
    bytes.remove_prefix(take);
  }
  feed(bytes);
  d.boundary = decoder.AtBoundary();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  const std::size_t max_frame = fdp.ConsumeBool() ? FrameDecoder::kDefaultMaxFrame
                                                  : fdp.ConsumeIntegralInRange<std::size_t>(0, 64);
  std::vector<std::size_t> cuts(fdp.ConsumeIntegralInRange<std::size_t>(0, 16));
  for (auto& cut : cuts) cut = fdp.ConsumeIntegralInRange<std::size_t>(0, 32);
  const std::string bytes = fdp.ConsumeRemainingBytesAsString();

  const Decoded whole = Decode(max_frame, bytes, {});
  const Decoded cut = Decode(max_frame, bytes, cuts);
  FUZZ_CHECK(whole.reencoded == cut.reencoded, "the same frames however the bytes are cut");
  FUZZ_CHECK(whole.error == cut.error, "the same failure");
  FUZZ_CHECK(std::string_view(bytes).starts_with(whole.reencoded),
             "frames re-encode to the bytes they came from");

  // Where the frames stop, either the bytes ended, a partial frame is pending, or the next
  // header is invalid; an independent look at that header.
  const std::string_view rest = std::string_view(bytes).substr(whole.reencoded.size());
  bool bad_header = false;
  if (rest.size() >= 5) {
    const auto* h = reinterpret_cast<const unsigned char*>(rest.data());  // NOLINT
    const std::size_t length = (std::size_t{h[0]} << 24) | (std::size_t{h[1]} << 16) |
                               (std::size_t{h[2]} << 8) | std::size_t{h[3]};
    const char kind = static_cast<char>(h[4]);
    bad_header = (kind != 'J' && kind != '1' && kind != '2') || length > max_frame;
  }
  FUZZ_CHECK(whole.error.has_value() == bad_header, "fails exactly at a bad header");
  if (!whole.error) FUZZ_CHECK(whole.boundary == rest.empty(), "AtBoundary tells a partial frame");
  return 0;
}
