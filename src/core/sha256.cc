#include "sandbox/core/sha256.h"

#include <cstring>

namespace sandbox {
namespace {

constexpr std::array<std::uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t Rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

std::string Hex(const Sha256::Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(digest.size() * 2);
  for (auto b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xF]);
  }
  return out;
}

}  // namespace

Sha256::Sha256()
    : state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
             0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::Block(const std::uint8_t* block) {
  std::array<std::uint32_t, 64> w{};
  for (std::size_t i = 0; i < 16; ++i) {
    w[i] = (std::uint32_t{block[i * 4]} << 24) | (std::uint32_t{block[i * 4 + 1]} << 16) |
           (std::uint32_t{block[i * 4 + 2]} << 8) | std::uint32_t{block[i * 4 + 3]};
  }
  for (std::size_t i = 16; i < 64; ++i) {
    const auto s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const auto s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  auto [a, b, c, d, e, f, g, h] = state_;
  for (std::size_t i = 0; i < 64; ++i) {
    const auto s1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    const auto ch = (e & f) ^ (~e & g);
    const auto t1 = h + s1 + ch + kRound[i] + w[i];
    const auto s0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    const auto maj = (a & b) ^ (a & c) ^ (b & c);
    const auto t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::Update(std::string_view bytes) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::size_t size = bytes.size();
  total_bytes_ += size;
  while (size > 0) {
    const std::size_t take = std::min(size, kBlockBytes - buffered_);
    std::memcpy(buffer_.data() + buffered_, data, take);
    buffered_ += take;
    data += take;
    size -= take;
    if (buffered_ == kBlockBytes) {
      Block(buffer_.data());
      buffered_ = 0;
    }
  }
}

Sha256::Digest Sha256::Finish() {
  const std::uint64_t bits = total_bytes_ * 8;
  // Padding: 0x80, zeros to 56 bytes mod 64, then the length in bits, big-endian.
  std::string pad(1, '\x80');
  const std::size_t used = (buffered_ + 1) % kBlockBytes;
  pad.append(used <= 56 ? 56 - used : 120 - used, '\0');
  for (int shift = 56; shift >= 0; shift -= 8)
    pad.push_back(static_cast<char>((bits >> shift) & 0xFF));
  Update(pad);
  Digest out{};
  for (std::size_t i = 0; i < state_.size(); ++i) {
    out[i * 4] = static_cast<std::uint8_t>(state_[i] >> 24);
    out[i * 4 + 1] = static_cast<std::uint8_t>(state_[i] >> 16);
    out[i * 4 + 2] = static_cast<std::uint8_t>(state_[i] >> 8);
    out[i * 4 + 3] = static_cast<std::uint8_t>(state_[i]);
  }
  return out;
}

Sha256::Digest Sha256Of(std::string_view bytes) {
  Sha256 sha;
  sha.Update(bytes);
  return sha.Finish();
}

std::string Sha256Hex(std::string_view bytes) { return Hex(Sha256Of(bytes)); }

std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  std::string block(Sha256::kBlockBytes, '\0');
  if (key.size() > Sha256::kBlockBytes) {
    const auto digest = Sha256Of(key);
    std::memcpy(block.data(), digest.data(), digest.size());
  } else {
    std::memcpy(block.data(), key.data(), key.size());
  }
  std::string inner_pad = block;
  std::string outer_pad = block;
  for (std::size_t i = 0; i < block.size(); ++i) {
    inner_pad[i] = static_cast<char>(block[i] ^ 0x36);
    outer_pad[i] = static_cast<char>(block[i] ^ 0x5c);
  }
  Sha256 inner;
  inner.Update(inner_pad);
  inner.Update(message);
  const auto inner_digest = inner.Finish();
  Sha256 outer;
  outer.Update(outer_pad);
  outer.Update(
      std::string_view(reinterpret_cast<const char*>(inner_digest.data()), inner_digest.size()));
  return Hex(outer.Finish());
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte of `a` is compared whatever `b` is, so timing tells nothing but a's length.
  std::uint8_t diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::uint8_t other = b.empty() ? 0 : static_cast<std::uint8_t>(b[i % b.size()]);
    diff = static_cast<std::uint8_t>(diff | (static_cast<std::uint8_t>(a[i]) ^ other));
  }
  return diff == 0;
}

}  // namespace sandbox
