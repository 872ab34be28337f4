// Scrubs secrets from a response on its way to the code: every occurrence of a pattern is
// replaced byte for byte by as many '*', so every length the response declares (Content-Length,
// and the chunk sizes the proxy writes) stays true. A stream is scrubbed as it passes: an
// occurrence split across reads is found because the last (longest pattern - 1) bytes are held
// back until more arrives or the stream ends.
// Thread-safety: a Scrubber belongs to one connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox::egress {

class Scrubber {
 public:
  // `patterns`: non-empty, longest first (Injection::scrub); must outlive the scrubber.
  explicit Scrubber(const std::vector<std::string>& patterns);

  // Takes the next bytes of the stream and appends to `out` what is released of it, scrubbed.
  void Feed(std::string_view bytes, std::string& out);
  // The stream ended: appends what was held back.
  void Finish(std::string& out);
  // Scrubs a whole text (a response head) in place.
  void ScrubWhole(std::string& text);

  // Occurrences replaced so far.
  std::uint64_t count() const { return count_; }
  // Bytes held back now (at most the longest pattern - 1).
  std::size_t held() const { return held_.size(); }

 private:
  // Replaces the occurrences in `text` that end at or after `fresh` (those before were replaced
  // when they were fresh).
  void Replace(std::string& text, std::size_t fresh);

  const std::vector<std::string>& patterns_;
  std::size_t keep_ = 0;  // longest pattern - 1
  std::string held_;
  std::uint64_t count_ = 0;
};

}  // namespace sandbox::egress
