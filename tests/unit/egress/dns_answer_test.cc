// The null resolver's answer (dns_answer.h): NXDOMAIN with the question echoed, and nothing for
// what is not one well-formed query.
#include "egress/dns_answer.h"

#include <gtest/gtest.h>

#include <string>

namespace sandbox::egress {
namespace {

std::string Query(const std::string& qname, char flags_hi = 0x01) {
  std::string q = {'\x12', '\x34', flags_hi, '\x20', 0, 1, 0, 0, 0, 0, 0, 1};  // ARCOUNT 1
  q += qname;
  q += std::string{0, 1, 0, 1};                             // A, IN
  q += std::string{0, 0, 0x29, 0x10, 0, 0, 0, 0, 0, 0, 0};  // EDNS OPT
  return q;
}

const std::string kPypi = std::string("\x04pypi\x03org\x00", 10);

TEST(NullDnsAnswerTest, AnswersNxdomainEchoingTheQuestion) {
  auto answer = NullDnsAnswer(Query(kPypi));
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->name, "pypi.org");
  const std::string& r = answer->response;
  ASSERT_EQ(r.size(), 12U + kPypi.size() + 4U);        // the OPT record is not echoed
  EXPECT_EQ(r.substr(0, 2), "\x12\x34");               // the id
  EXPECT_EQ(static_cast<unsigned char>(r[2]), 0x81U);  // QR, opcode 0, RD echoed
  EXPECT_EQ(static_cast<unsigned char>(r[3]), 0x83U);  // RA, NXDOMAIN
  const std::string counts{0, 1, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(r.substr(4, 8), counts);
  const std::string type_class{0, 1, 0, 1};
  EXPECT_EQ(r.substr(12), kPypi + type_class);
}

TEST(NullDnsAnswerTest, TheRootAndOddBytesAreNamedReadably) {
  EXPECT_EQ(NullDnsAnswer(Query(std::string(1, '\0')))->name, ".");
  EXPECT_EQ(NullDnsAnswer(Query(std::string("\x03"
                                            "a.\n\x01x\x00",
                                            7)))
                ->name,
            "a\\046\\010.x");
}

TEST(NullDnsAnswerTest, IgnoresWhatIsNotOneWellFormedQuery) {
  EXPECT_FALSE(NullDnsAnswer("").has_value());
  EXPECT_FALSE(NullDnsAnswer(Query(kPypi).substr(0, 11)).has_value());
  EXPECT_FALSE(NullDnsAnswer(Query(kPypi, '\x81')).has_value());  // a response
  EXPECT_FALSE(NullDnsAnswer(Query(kPypi, '\x28')).has_value());  // opcode UPDATE
  std::string two = Query(kPypi);
  two[5] = 2;
  EXPECT_FALSE(NullDnsAnswer(two).has_value());
  EXPECT_FALSE(NullDnsAnswer(Query(std::string("\xc0\x0c", 2))).has_value());  // a pointer
  const std::string q = Query(kPypi);
  EXPECT_FALSE(NullDnsAnswer(q.substr(0, 12 + kPypi.size() + 3)).has_value());  // no QCLASS
  EXPECT_FALSE(NullDnsAnswer(q.substr(0, 12 + 5)).has_value());                 // a label cut short
  std::string long_name;
  for (int i = 0; i < 5; ++i) long_name += std::string(1, 63) + std::string(63, 'a');
  EXPECT_FALSE(NullDnsAnswer(Query(long_name + std::string(1, '\0'))).has_value());
}

}  // namespace
}  // namespace sandbox::egress
