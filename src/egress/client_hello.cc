#include "client_hello.h"

#include <optional>

namespace sandbox::egress {
namespace {

using State = ClientHelloScan::State;

constexpr std::uint8_t kRecordHandshake = 0x16;
constexpr std::uint8_t kHandshakeClientHello = 1;
constexpr std::uint16_t kExtensionServerName = 0;
constexpr std::uint8_t kNameTypeHostName = 0;

// Reads big-endian integers and byte runs from a buffer; every read is bounds-checked and a
// failed one leaves the reader failed.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  std::optional<std::uint32_t> Uint(int bytes) {
    if (data_.size() < static_cast<std::size_t>(bytes)) return std::nullopt;
    std::uint32_t value = 0;
    for (int i = 0; i < bytes; ++i) {
      value = (value << 8) | static_cast<std::uint8_t>(data_[static_cast<std::size_t>(i)]);
    }
    data_.remove_prefix(static_cast<std::size_t>(bytes));
    return value;
  }
  std::optional<std::string_view> Bytes(std::size_t n) {
    if (data_.size() < n) return std::nullopt;
    auto out = data_.substr(0, n);
    data_.remove_prefix(n);
    return out;
  }
  // A run of bytes prefixed with its length in `length_bytes` bytes.
  std::optional<std::string_view> Vector(int length_bytes) {
    auto n = Uint(length_bytes);
    if (!n) return std::nullopt;
    return Bytes(*n);
  }
  bool empty() const { return data_.empty(); }

 private:
  std::string_view data_;
};

ClientHelloScan Malformed() { return {State::kMalformed, ""}; }

// The ClientHello's body (after the handshake header) to its server name.
ClientHelloScan ParseBody(std::string_view body) {
  Reader r(body);
  if (!r.Uint(2) || !r.Bytes(32)) return Malformed();  // legacy_version, random
  auto session_id = r.Vector(1);
  auto cipher_suites = r.Vector(2);
  auto compression = r.Vector(1);
  if (!session_id || session_id->size() > 32 || !cipher_suites || cipher_suites->empty() ||
      cipher_suites->size() % 2 != 0 || !compression || compression->empty()) {
    return Malformed();
  }
  if (r.empty()) return {State::kNoServerName, ""};  // no extensions at all
  auto extensions = r.Vector(2);
  if (!extensions || !r.empty()) return Malformed();
  Reader e(*extensions);
  std::optional<std::string> name;
  while (!e.empty()) {
    auto type = e.Uint(2);
    auto data = e.Vector(2);
    if (!type || !data) return Malformed();
    if (*type != kExtensionServerName) continue;
    if (name) return Malformed();  // one server_name extension at most (RFC 8446 4.2)
    Reader list_reader(*data);
    auto list = list_reader.Vector(2);
    if (!list || !list_reader.empty()) return Malformed();
    Reader entries(*list);
    while (!entries.empty()) {
      auto name_type = entries.Uint(1);
      auto value = entries.Vector(2);
      if (!name_type || !value) return Malformed();
      if (*name_type != kNameTypeHostName) continue;
      if (name) return Malformed();  // one host_name per list (RFC 6066 3)
      if (value->empty()) return Malformed();
      name = std::string(*value);
    }
    if (!name) return Malformed();  // an extension with no host_name in it
  }
  if (!name) return {State::kNoServerName, ""};
  return {State::kServerName, std::move(*name)};
}

}  // namespace

ClientHelloScan ScanClientHello(std::string_view bytes) {
  if (bytes.empty()) return {State::kNeedMore, ""};
  if (static_cast<std::uint8_t>(bytes[0]) != kRecordHandshake) return {State::kNotTls, ""};
  // The handshake message may span records: gather their fragments until it is complete.
  std::string handshake;
  Reader records(bytes);
  while (true) {
    auto type = records.Uint(1);
    if (!type) return {State::kNeedMore, ""};
    if (*type != kRecordHandshake) return Malformed();  // no other record before the hello
    auto version = records.Uint(2);
    if (!version) return {State::kNeedMore, ""};
    if ((*version >> 8) != 3) return {State::kNotTls, ""};
    auto length = records.Uint(2);
    if (!length) return {State::kNeedMore, ""};
    if (*length == 0 || *length > (1U << 14)) return Malformed();  // TLS's record size bound
    auto fragment = records.Bytes(*length);
    if (!fragment) {
      if (bytes.size() > kMaxClientHelloBytes) return Malformed();
      return {State::kNeedMore, ""};
    }
    handshake.append(*fragment);
    Reader h(handshake);
    auto msg_type = h.Uint(1);
    auto msg_length = h.Uint(3);
    if (!msg_type || !msg_length) continue;  // the header itself spans records
    if (*msg_type != kHandshakeClientHello) return Malformed();
    if (*msg_length > kMaxClientHelloBytes) return Malformed();
    auto body = h.Bytes(*msg_length);
    if (!body) {
      if (handshake.size() > kMaxClientHelloBytes) return Malformed();
      continue;
    }
    return ParseBody(*body);
  }
}

std::string TlsAlert(std::uint8_t description) {
  // ContentType alert (21), TLS 1.2, length 2, level fatal (2), the description.
  return std::string{
      '\x15', '\x03', '\x03', '\x00', '\x02', '\x02', static_cast<char>(description)};
}

}  // namespace sandbox::egress
