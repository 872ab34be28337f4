// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), self-contained: no library the project
// links is guaranteed to offer them (libcurl's TLS backend varies). Used to keep session ids out
// of container labels (only their hash is stored) and to authenticate a restored session's record.
// Not constant-time on secret-dependent branches beyond what the algorithm itself is.
// Thread-safety: stateless functions; a Sha256 object belongs to one thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sandbox {

class Sha256 {
 public:
  static constexpr std::size_t kDigestBytes = 32;
  static constexpr std::size_t kBlockBytes = 64;
  using Digest = std::array<std::uint8_t, kDigestBytes>;

  Sha256();
  void Update(std::string_view bytes);
  // The digest of everything given; the object must not be used afterwards.
  Digest Finish();

 private:
  void Block(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, kBlockBytes> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

Sha256::Digest Sha256Of(std::string_view bytes);
// Lower-case hex of the digest (64 characters).
std::string Sha256Hex(std::string_view bytes);
std::string HmacSha256Hex(std::string_view key, std::string_view message);
// Compares without an early exit, so a timing difference does not tell how much matched.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace sandbox
