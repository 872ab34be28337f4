#include "sandbox/service/session_record.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "sandbox/core/sha256.h"
#include "sandbox/runner/harness_sandbox.h"  // kHarnessProtocol

namespace sandbox::service {
namespace {

using nlohmann::json;

constexpr const char* kId = "0123456789abcdef0123456789abcdef";
constexpr std::int64_t kNow = 1'800'000'000'000;

SessionRecord Record() {
  SessionRecord r;
  r.key = SessionKey(kId);
  r.principal = "alice";
  r.pool = "default";
  r.created_unix_ms = kNow - 60'000;
  r.limits.timeout_s = 12.5;
  r.limits.memory_bytes = 256LL << 20;
  r.limits.output_bytes = 4096;
  return r;
}

LeftSession Left() {
  LeftSession left;
  left.labels = {{"io.sandbox-mcp.managed", "true"},
                 {"io.sandbox-mcp.instance", "prod"},
                 {"io.sandbox-mcp.mode", "session"},
                 {std::string(kSessionKeyLabel), SessionKey(kId)}};
  left.record = EncodeRecord(Record(), kId);
  left.idle_s = 3;
  left.protocol = runner::kHarnessProtocol;
  return left;
}

AdoptionContext Context() {
  AdoptionContext c;
  c.instance_id = "prod";
  c.grace = std::chrono::seconds(300);
  c.max_lifetime = std::chrono::hours(4);
  c.pools = {{"default", Record().limits}};
  c.now_unix_ms = kNow;
  return c;
}

TEST(SessionRecordTest, TheKeyIsTheIdsSha256AndNeverTheId) {
  EXPECT_EQ(SessionKey("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(IsSessionKey(SessionKey(kId)));
  EXPECT_FALSE(IsSessionKey(kId));
  EXPECT_FALSE(IsSessionKey(std::string(64, 'G')));
  const std::string encoded = EncodeRecord(Record(), kId).dump();
  EXPECT_EQ(encoded.find(kId), std::string::npos) << encoded;
}

TEST(SessionRecordTest, EncodeDecodeRoundTrip) {
  const json encoded = EncodeRecord(Record(), kId);
  // As the harness sends it back: through a JSON text (member order may differ).
  const json back = json::parse(encoded.dump(2));
  auto decoded = DecodeRecord(back);
  ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
  EXPECT_EQ(decoded->key, SessionKey(kId));
  EXPECT_EQ(decoded->principal, "alice");
  EXPECT_EQ(decoded->pool, "default");
  EXPECT_EQ(decoded->created_unix_ms, kNow - 60'000);
  EXPECT_EQ(decoded->limits.timeout_s, 12.5);
  EXPECT_EQ(decoded->limits.memory_bytes, 256LL << 20);
  EXPECT_EQ(decoded->limits.output_bytes, 4096);
  EXPECT_EQ(decoded->limits.nproc, Record().limits.nproc);
  EXPECT_TRUE(RecordMatchesId(back, kId));
}

TEST(SessionRecordTest, MalformedRecordsAreRefused) {
  const json good = EncodeRecord(Record(), kId);
  for (const char* member : {"v", "key", "principal", "pool", "created_unix_ms", "limits", "mac"}) {
    json cut = good;
    cut.erase(member);
    EXPECT_FALSE(DecodeRecord(cut).ok()) << "accepted without " << member;
  }
  json negative = good;
  negative["limits"]["memory_bytes"] = -1;
  EXPECT_FALSE(DecodeRecord(negative).ok());
  json later = good;
  later["v"] = 2;
  EXPECT_FALSE(DecodeRecord(later).ok());
  EXPECT_FALSE(DecodeRecord(json("text")).ok());
}

// Only the id's holder can make a record that checks out: a changed owner, creation time or
// limit, another id, or a record made with another id all fail.
TEST(SessionRecordTest, TheMacBindsTheRecordToTheId) {
  const json good = EncodeRecord(Record(), kId);
  EXPECT_TRUE(RecordMatchesId(good, kId));
  EXPECT_FALSE(RecordMatchesId(good, "0123456789abcdef0123456789abcdee"));
  json owner = good;
  owner["principal"] = "mallory";
  EXPECT_FALSE(RecordMatchesId(owner, kId));
  json created = good;
  created["created_unix_ms"] = kNow;
  EXPECT_FALSE(RecordMatchesId(created, kId));
  json limits = good;
  limits["limits"]["memory_bytes"] = 1LL << 40;
  EXPECT_FALSE(RecordMatchesId(limits, kId));
  SessionRecord other = Record();
  other.key = SessionKey("another id");
  EXPECT_FALSE(RecordMatchesId(EncodeRecord(other, "another id"), kId));
  EXPECT_FALSE(RecordMatchesId(json::object(), kId));
}

// server.replica: the prefix is part of the id, so the key and the MAC cover it; the same random
// part with another replica's prefix (or none) does not match.
TEST(SessionRecordTest, AReplicasIdsCarryItsPrefixAndTheRecordCoversIt) {
  const std::string id = NewSessionId("r1");
  ASSERT_EQ(id.rfind("r1-", 0), 0u) << id;
  EXPECT_EQ(id.size(), 3u + 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 3), std::string::npos) << id;
  EXPECT_EQ(NewSessionId("").size(), 32u);
  EXPECT_NE(NewSessionId("r1"), id);
  SessionRecord record = Record();
  record.key = SessionKey(id);
  const json encoded = EncodeRecord(record, id);
  EXPECT_TRUE(RecordMatchesId(encoded, id));
  EXPECT_FALSE(RecordMatchesId(encoded, "r2-" + id.substr(3)));
  EXPECT_FALSE(RecordMatchesId(encoded, id.substr(3)));
}

TEST(SessionRecordTest, AdoptsWithinTheGrace) {
  auto d = DecideAdoption(Left(), Context());
  EXPECT_TRUE(d.adopt) << d.reason;
  ASSERT_TRUE(d.record.has_value());
  EXPECT_EQ(d.record->principal, "alice");
  EXPECT_EQ(d.record->key, SessionKey(kId));
}

TEST(SessionRecordTest, RemovesOnceTheDeadlinePassed) {
  auto left = Left();
  left.idle_s = 300;  // the grace is 300 s: the deadline is reached
  auto d = DecideAdoption(left, Context());
  EXPECT_FALSE(d.adopt);
  EXPECT_NE(d.reason.find("beyond the restart grace"), std::string::npos) << d.reason;
  left.idle_s = 299.5;
  EXPECT_TRUE(DecideAdoption(left, Context()).adopt);
  // A server started with a smaller grace applies its own.
  auto context = Context();
  context.grace = std::chrono::seconds(2);
  left.idle_s = 3;
  EXPECT_FALSE(DecideAdoption(left, context).adopt);
  context.grace = std::chrono::seconds(0);
  left.idle_s = 0;
  EXPECT_FALSE(DecideAdoption(left, context).adopt);
}

TEST(SessionRecordTest, RemovesAnotherInstancesOrUnlabelledContainers) {
  auto left = Left();
  left.labels["io.sandbox-mcp.instance"] = "staging";
  auto d = DecideAdoption(left, Context());
  EXPECT_FALSE(d.adopt);
  EXPECT_NE(d.reason.find("staging"), std::string::npos) << d.reason;
  left = Left();
  left.labels.erase(std::string(kSessionKeyLabel));
  EXPECT_FALSE(DecideAdoption(left, Context()).adopt);
  left = Left();
  left.labels["io.sandbox-mcp.mode"] = "recycle";
  EXPECT_FALSE(DecideAdoption(left, Context()).adopt);
  left = Left();
  left.labels[std::string(kSessionKeyLabel)] = kId;  // a raw id is not a key
  EXPECT_FALSE(CheckSessionLabels(left.labels, "prod").ok());
}

TEST(SessionRecordTest, RemovesOnAHashMismatch) {
  auto left = Left();
  left.labels[std::string(kSessionKeyLabel)] = SessionKey("some other session");
  auto d = DecideAdoption(left, Context());
  EXPECT_FALSE(d.adopt);
  EXPECT_NE(d.reason.find("does not match"), std::string::npos) << d.reason;
}

TEST(SessionRecordTest, RemovesWarmLifetimeEndedUnknownPoolOrOtherProtocol) {
  auto left = Left();
  left.record = nullptr;  // a warm container: never served a session
  EXPECT_FALSE(DecideAdoption(left, Context()).adopt);
  left = Left();
  left.protocol = runner::kHarnessProtocol - 1;
  EXPECT_FALSE(DecideAdoption(left, Context()).adopt);
  auto context = Context();
  context.pools = {{"other", Record().limits}};
  EXPECT_FALSE(DecideAdoption(Left(), context).adopt);
  context = Context();
  context.max_lifetime = std::chrono::seconds(60);  // created 60 s ago
  EXPECT_FALSE(DecideAdoption(Left(), context).adopt);
  context.max_lifetime = std::chrono::seconds(61);
  EXPECT_TRUE(DecideAdoption(Left(), context).adopt);
}

// Nothing of a left record is trusted before its id is presented: one asking more than its
// pool allows now (forged, or the operator lowered max_limits) is never adopted.
TEST(SessionRecordTest, RemovesARecordAboveItsPoolsMaxLimits) {
  auto context = Context();
  auto max = Record().limits;
  max.cpus = 0.25;  // not in a record: never compared
  max.pids = 8;
  context.pools["default"] = max;
  EXPECT_TRUE(DecideAdoption(Left(), context).adopt);
  for (auto narrow : {+[](runner::RunLimits& l) { l.timeout_s = 12; },
                      +[](runner::RunLimits& l) { l.memory_bytes -= 1; },
                      +[](runner::RunLimits& l) { l.output_bytes = 4095; }}) {
    auto lowered = context;
    narrow(lowered.pools["default"]);
    auto decision = DecideAdoption(Left(), lowered);
    EXPECT_FALSE(decision.adopt);
    EXPECT_NE(decision.reason.find("exceeds pool \"default\"'s max_limits."), std::string::npos)
        << decision.reason;
  }
}

// idle_s is the harness's claim: whatever double arrives is compared and logged safely.
TEST(SessionRecordTest, AnyClaimedIdleTimeIsHandled) {
  auto left = Left();
  for (double idle :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e300}) {
    left.idle_s = idle;
    auto decision = DecideAdoption(left, Context());
    EXPECT_FALSE(decision.adopt) << idle;
    EXPECT_NE(decision.reason.find("beyond the restart grace"), std::string::npos);
  }
  left.idle_s = -1e300;  // no older than a fresh one: adopted, logged without overflow
  auto decision = DecideAdoption(left, Context());
  EXPECT_TRUE(decision.adopt);
  EXPECT_NE(decision.reason.find("an unknown number of s ago"), std::string::npos)
      << decision.reason;
}

}  // namespace
}  // namespace sandbox::service
