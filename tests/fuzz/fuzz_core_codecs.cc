// base64 (core/base64.h, also the engine client's decoder of its path-stat header) and UTF-8
// repair (core/utf8.h). Properties:
//   - Base64Decode(Base64Encode(x)) == x, and a successful strict decode re-encodes to its input
//     (one encoding per byte string).
//   - RepairUtf8 output is valid UTF-8 (IsValidUtf8, and nlohmann's strict dump accepts it);
//     valid input comes back unchanged; repair is idempotent.
//   - Utf8StreamDecoder fed the input in fuzzer-chosen pieces yields exactly RepairUtf8(input).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sandbox/core/base64.h"
#include "sandbox/core/utf8.h"

namespace {

void CheckBase64(std::string_view bytes) {
  const std::string encoded = sandbox::Base64Encode(bytes);
  FUZZ_CHECK(encoded.size() == (bytes.size() + 2) / 3 * 4, "encoded length");
  auto decoded = sandbox::Base64Decode(encoded);
  FUZZ_CHECK(decoded.ok() && *decoded == bytes, "decode(encode(x)) == x");

  // The input read as base64 text.
  auto strict = sandbox::Base64Decode(bytes);
  if (strict.ok()) {
    FUZZ_CHECK(sandbox::Base64Encode(*strict) == bytes, "a strict decode is canonical");
  } else {
    FUZZ_CHECK(!strict.error().message().empty(), "a refusal says why");
  }
}

void CheckUtf8(std::string_view bytes, std::string_view splits) {
  const std::string repaired = sandbox::RepairUtf8(bytes);
  FUZZ_CHECK(sandbox::IsValidUtf8(repaired), "repaired text is valid UTF-8");
  FUZZ_CHECK(sandbox::RepairUtf8(repaired) == repaired, "repair is idempotent");
  const bool valid = sandbox::IsValidUtf8(bytes);
  if (valid) FUZZ_CHECK(repaired == bytes, "valid input is unchanged");
  // nlohmann's own UTF-8 check (dump throws on invalid UTF-8 by default) agrees.
  bool dumped = true;
  try {
    (void)nlohmann::json(std::string(bytes)).dump();
  } catch (const nlohmann::json::type_error&) {
    dumped = false;
  }
  FUZZ_CHECK(dumped == valid, "IsValidUtf8 agrees with nlohmann");
  (void)nlohmann::json(repaired).dump();  // throws (a finding) if repair left invalid bytes

  const std::size_t prefix = sandbox::CompleteUtf8Prefix(bytes);
  FUZZ_CHECK(prefix <= bytes.size() && prefix + 3 >= bytes.size(), "prefix within 3 bytes");

  sandbox::Utf8StreamDecoder decoder;
  std::string streamed;
  std::string_view rest = bytes;
  for (char split : splits) {
    const std::size_t take =
        std::min<std::size_t>(static_cast<unsigned char>(split) % 8U, rest.size());
    streamed += decoder.Feed(rest.substr(0, take));
    rest.remove_prefix(take);
  }
  streamed += decoder.Feed(rest);
  streamed += decoder.Flush();
  FUZZ_CHECK(streamed == repaired, "streamed decoding equals RepairUtf8 of the whole");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The first byte says how many trailing bytes choose the stream's chunk sizes.
  const std::size_t n_splits = input.empty() ? 0 : std::min<std::size_t>(input[0] & 0x0F, size - 1);
  const std::string_view splits = input.substr(input.empty() ? 0 : 1, n_splits);
  const std::string_view text = input.substr(input.empty() ? 0 : 1 + n_splits);
  CheckBase64(input);
  CheckUtf8(text, splits);
  return 0;
}
