#include "scrubber.h"

#include <algorithm>

namespace sandbox::egress {

Scrubber::Scrubber(const std::vector<std::string>& patterns) : patterns_(patterns) {
  for (const std::string& pattern : patterns_) {
    if (!pattern.empty()) keep_ = std::max(keep_, pattern.size() - 1);
  }
}

void Scrubber::Replace(std::string& text, std::size_t fresh) {
  for (const std::string& pattern : patterns_) {
    if (pattern.empty() || text.size() < pattern.size()) continue;
    // An occurrence ending at or after `fresh` starts at or after fresh - (size - 1).
    std::size_t at = fresh >= pattern.size() - 1 ? fresh - (pattern.size() - 1) : 0;
    while ((at = text.find(pattern, at)) != std::string::npos) {
      std::fill_n(text.begin() + static_cast<std::ptrdiff_t>(at), pattern.size(), '*');
      ++count_;
      at += pattern.size();
    }
  }
}

void Scrubber::Feed(std::string_view bytes, std::string& out) {
  if (bytes.empty()) return;
  const std::size_t fresh = held_.size();
  held_.append(bytes);
  Replace(held_, fresh);
  if (held_.size() <= keep_) return;
  const std::size_t release = held_.size() - keep_;
  out.append(held_, 0, release);
  held_.erase(0, release);
}

void Scrubber::Finish(std::string& out) {
  out.append(held_);
  held_.clear();
}

void Scrubber::ScrubWhole(std::string& text) { Replace(text, 0); }

}  // namespace sandbox::egress
