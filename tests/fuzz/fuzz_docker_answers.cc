// The engine client's parsers of engine answers (docker/): archives (ReadTar,
// ExtractSingleFile), the X-Docker-Container-Path-Stat header, event lines, error bodies and the
// JSON answer models. The engine is a peer like any other: none of them may crash or throw
// (an escaping exception ends the process), whatever the bytes. The first byte picks the parser.
// Properties besides: an archive read back from what ReadTar returned (when the ustar writer can
// write those entries) yields the same entries; an event always has an action; an error answer
// is never empty and maps 404/409 to kNotFound/kConflict.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sandbox/core/base64.h"
#include "sandbox/core/json.h"
#include "sandbox/docker/archive.h"
#include "sandbox/docker/events.h"
#include "sandbox/docker/models.h"
#include "sandbox/docker/transport.h"

namespace {

using namespace sandbox::docker;  // NOLINT(google-build-using-namespace): a fuzz target

void CheckTar(std::string_view bytes) {
  auto entries = ReadTar(bytes);
  auto single = ExtractSingleFile(bytes);
  if (!entries.ok()) {
    FUZZ_CHECK(!single.ok(), "ExtractSingleFile fails with ReadTar");
    FUZZ_CHECK(!entries.error().message().empty(), "says why");
    return;
  }
  for (const auto& e : *entries) FUZZ_CHECK(e.type == '0' || e.type == '5', "files and dirs only");
  auto written = WriteTar(*entries);
  if (!written.ok()) return;  // e.g. a PAX name longer than ustar holds
  auto again = ReadTar(*written);
  FUZZ_CHECK(again.ok() && again->size() == entries->size(), "the written archive reads back");
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const TarEntry& a = (*entries)[i];
    const TarEntry& b = (*again)[i];
    const std::string name = a.type == '5' && !a.name.ends_with('/') ? a.name + "/" : a.name;
    FUZZ_CHECK(b.name == name && b.type == a.type && b.content == a.content && b.mode == a.mode,
               "same entries after a round trip");
  }
}

void CheckJsonModels(std::string_view text) {
  auto parsed = sandbox::ParseJson(text);
  if (!parsed.ok()) return;
  const nlohmann::json& j = *parsed;
  (void)ParseVersion(j);
  (void)ParseInfo(j);
  (void)ParseImageInspect(j);
  (void)ParseCreated(j);
  (void)ParseContainerInspect(j);
  (void)ParseContainerList(j);
  (void)ParseWait(j);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      CheckTar(input);
      break;
    case 1: {
      auto stat = ParsePathStatHeader(input);
      // The header as the engine encodes it: base64 of the JSON.
      auto encoded = ParsePathStatHeader(sandbox::Base64Encode(input));
      (void)stat;
      (void)encoded;
      break;
    }
    case 2: {
      auto event = ParseEvent(input);
      if (event.ok()) {
        FUZZ_CHECK(!event->action.empty(), "an event has an action");
        (void)event->exit_code();
      }
      break;
    }
    case 3: {
      const long status = 400 + static_cast<long>(data[0] % 3) * 4 + (data[0] % 7);  // 400..414
      for (long s : {status, 404L, 409L, 500L}) {
        auto error = ErrorFromResponse(s, input, "fuzz");
        FUZZ_CHECK(!error.message().empty(), "never an empty message");
        FUZZ_CHECK(error.http_status() == s, "carries the status");
        if (s == 404) FUZZ_CHECK(error.code() == sandbox::ErrorCode::kNotFound, "404");
        if (s == 409) FUZZ_CHECK(error.code() == sandbox::ErrorCode::kConflict, "409");
      }
      break;
    }
    default:
      CheckJsonModels(input);
      break;
  }
  return 0;
}
