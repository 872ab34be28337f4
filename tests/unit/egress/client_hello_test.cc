// The SNI of a TLS ClientHello (client_hello.h): a real one from Python's ssl module (OpenSSL 3),
// split anywhere and across records, and hand-made edge cases.
#include "egress/client_hello.h"

#include <gtest/gtest.h>

#include <string>

namespace sandbox::egress {
namespace {

using State = ClientHelloScan::State;

// Captured from Python 3.11's ssl.create_default_context().wrap_socket(server_hostname=
// "files.pythonhosted.org") on Debian bookworm: one handshake record.
const char* const kPythonHello =
    "1603010200010001fc030333b6d0494ac6b86b44edc7d29e87e083c39a221f03695f51a4002e527a"
    "2a197f2000c69f5d128c0fb876c99fbc2e532ac44036379bd95f7ea5b952d8dafa8078e900241302"
    "13031301c02cc030c02bc02fcca9cca8c024c028c023c027009f009e006b006700ff0100018f0000"
    "001b001900001666696c65732e707974686f6e686f737465642e6f7267000b000403000102000a00"
    "160014001d0017001e0019001801000101010201030104002300000016000000170000000d002a00"
    "28040305030603080708080809080a080b0804080508060401050106010303030103020402050206"
    "02002b00050403040303002d00020101003300260024001d00200000fa150478e0521ca830258aa1"
    "bdfa5511bcc31c4e0fa857fc05ab2d62195c001500d7000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000";

std::string FromHex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::string U16(std::size_t n) {
  return std::string{static_cast<char>((n >> 8) & 0xFF), static_cast<char>(n & 0xFF)};
}

std::string U24(std::size_t n) { return std::string{static_cast<char>((n >> 16) & 0xFF)} + U16(n); }

// A ClientHello with these extensions (each already framed), in one record.
std::string Hello(const std::string& extensions, bool with_extensions = true) {
  std::string body = "\x03\x03" + std::string(32, 'r') + std::string(1, '\0') + U16(2) +
                     "\x13\x01" + std::string(1, '\x01') + std::string(1, '\0');
  if (with_extensions) body += U16(extensions.size()) + extensions;
  const std::string handshake = "\x01" + U24(body.size()) + body;
  return "\x16\x03\x01" + U16(handshake.size()) + handshake;
}

std::string SniExtension(const std::string& names) {  // names: framed entries
  const std::string list = U16(names.size()) + names;
  return std::string(2, '\0') + U16(list.size()) + list;
}

std::string HostName(const std::string& name) {
  return std::string(1, '\0') + U16(name.size()) + name;
}

TEST(ClientHelloTest, ARealHelloNamesItsServerAndEveryPrefixNeedsMore) {
  const std::string hello = FromHex(kPythonHello);
  const auto scan = ScanClientHello(hello);
  EXPECT_EQ(scan.state, State::kServerName);
  EXPECT_EQ(scan.server_name, "files.pythonhosted.org");
  for (std::size_t n = 0; n < hello.size(); ++n) {
    EXPECT_EQ(ScanClientHello(hello.substr(0, n)).state, State::kNeedMore) << n;
  }
  // Bytes after the hello (the client's next flight) do not change the answer.
  EXPECT_EQ(ScanClientHello(hello + "\x14\x03\x03").server_name, "files.pythonhosted.org");
}

TEST(ClientHelloTest, AHelloSplitAcrossRecordsIsReassembled) {
  const std::string hello = FromHex(kPythonHello);
  const std::string handshake = hello.substr(5);
  for (std::size_t cut : {1u, 3u, 4u, 100u}) {
    const std::string first = handshake.substr(0, cut);
    const std::string second = handshake.substr(cut);
    const std::string records =
        "\x16\x03\x01" + U16(first.size()) + first + "\x16\x03\x01" + U16(second.size()) + second;
    const auto scan = ScanClientHello(records);
    EXPECT_EQ(scan.state, State::kServerName) << cut;
    EXPECT_EQ(scan.server_name, "files.pythonhosted.org") << cut;
  }
}

TEST(ClientHelloTest, HandMadeEdgeCases) {
  EXPECT_EQ(ScanClientHello(Hello(SniExtension(HostName("pypi.org")))).server_name, "pypi.org");
  // Other extensions around it, and other name types in the list, are skipped.
  const std::string other = std::string("\x00\x0b", 2) + U16(2) + std::string("\x01\x00", 2);
  const std::string other_type = std::string(1, '\x07') + U16(3) + "abc";
  const auto mixed =
      ScanClientHello(Hello(other + SniExtension(other_type + HostName("pypi.org")) + other));
  EXPECT_EQ(mixed.state, State::kServerName);
  EXPECT_EQ(mixed.server_name, "pypi.org");
  EXPECT_EQ(ScanClientHello(Hello(other)).state, State::kNoServerName);
  EXPECT_EQ(ScanClientHello(Hello("", false)).state, State::kNoServerName);
  // Two server names, two extensions, an empty name, a broken length: malformed.
  EXPECT_EQ(ScanClientHello(Hello(SniExtension(HostName("a.org") + HostName("b.org")))).state,
            State::kMalformed);
  EXPECT_EQ(
      ScanClientHello(Hello(SniExtension(HostName("a.org")) + SniExtension(HostName("b.org"))))
          .state,
      State::kMalformed);
  EXPECT_EQ(ScanClientHello(Hello(SniExtension(HostName("")))).state, State::kMalformed);
  std::string broken = Hello(SniExtension(HostName("pypi.org")));
  broken[broken.size() - 10] = '\x7f';  // the name's length now runs past the list
  EXPECT_EQ(ScanClientHello(broken).state, State::kMalformed);
  // Not TLS at all: plain HTTP, SSH; a record that is not a handshake; a ServerHello.
  EXPECT_EQ(ScanClientHello("GET / HTTP/1.1\r\n").state, State::kNotTls);
  EXPECT_EQ(ScanClientHello("SSH-2.0-OpenSSH_9.2\r\n").state, State::kNotTls);
  EXPECT_EQ(ScanClientHello("\x16\x07\x01").state, State::kNotTls);
  std::string server_hello = Hello("");
  server_hello[5] = '\x02';
  EXPECT_EQ(ScanClientHello(server_hello).state, State::kMalformed);
  // A record longer than TLS allows, and a hello that never ends within the bound.
  EXPECT_EQ(ScanClientHello(std::string("\x16\x03\x01\x50\x00", 5)).state, State::kMalformed);
  std::string endless = "\x16\x03\x01" + U16(16384) + "\x01" + U24(1 << 20);
  endless += std::string(16380, 'x');
  EXPECT_EQ(ScanClientHello(endless).state, State::kMalformed);
}

TEST(ClientHelloTest, TheAlertIsAFatalTlsRecord) {
  EXPECT_EQ(TlsAlert(kAlertAccessDenied), std::string("\x15\x03\x03\x00\x02\x02\x31", 7));
}

}  // namespace
}  // namespace sandbox::egress
