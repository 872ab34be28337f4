// What a session container's harness answers to `resume` after a server restart
// (service/session_record.h): its record and idle time are claims from inside a container
// that ran user code, read before the session id that could verify them is presented.
// The input is JSON {"labels": {...}, "record": ..., "idle_s": n, "protocol": n}; any other
// JSON is taken as the record alone, with well-formed labels. Properties:
//   - DecodeRecord, RecordMatchesId and DecideAdoption never crash, throw or overflow;
//   - an adopted record decodes, its key is the container's label, its pool is configured and
//     its limits are within that pool's max_limits, and its creation is not in the future;
//   - a record that matches the fixed id decodes with that id's key;
//   - what DecodeRecord accepts, EncodeRecord signs again so that it decodes equal and matches
//     the id exactly when it carries that id's key.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sandbox/config/limits_check.h"
#include "sandbox/core/json.h"
#include "sandbox/runner/harness_sandbox.h"
#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/session_record.h"

namespace {

using nlohmann::json;
using namespace sandbox::service;

constexpr std::string_view kId = "0123456789abcdef0123456789abcdef";
constexpr std::int64_t kNow = 1'800'000'000'000;

std::map<std::string, std::string> GoodLabels() {
  return {{std::string(sandbox::runner::kManagedLabel), "true"},
          {std::string(sandbox::runner::kInstanceLabel), "prod"},
          {std::string(sandbox::runner::kModeLabel), "session"},
          {std::string(kSessionKeyLabel), SessionKey(kId)}};
}

AdoptionContext Context() {
  AdoptionContext c;
  c.instance_id = "prod";
  c.grace = std::chrono::seconds(300);
  c.max_lifetime = std::chrono::hours(4);
  sandbox::runner::RunLimits max;
  max.timeout_s = 300;
  max.output_bytes = 1 << 20;
  c.pools = {{"default", max}, {"big", sandbox::runner::RunLimits{}}};
  c.now_unix_ms = kNow;
  return c;
}

LeftSession LeftFrom(const json& j) {
  LeftSession left;
  left.labels = GoodLabels();
  left.protocol = sandbox::runner::kHarnessProtocol;
  if (!j.is_object() || !j.contains("record")) {
    left.record = j;
    return left;
  }
  left.record = j.at("record");
  if (auto labels = j.find("labels"); labels != j.end() && labels->is_object()) {
    left.labels.clear();
    for (const auto& [key, value] : labels->items()) {
      if (value.is_string()) left.labels[key] = value.get<std::string>();
    }
  }
  if (auto idle = j.find("idle_s"); idle != j.end() && idle->is_number()) {
    left.idle_s = idle->get<double>();
  }
  if (auto protocol = j.find("protocol"); protocol != j.end()) {
    left.protocol = static_cast<int>(sandbox::JsonInteger(*protocol).value_or(0));
  }
  return left;
}

bool SameRecord(const SessionRecord& a, const SessionRecord& b) {
  const auto& x = a.limits;
  const auto& y = b.limits;
  return a.key == b.key && a.principal == b.principal && a.pool == b.pool &&
         a.created_unix_ms == b.created_unix_ms && x.timeout_s == y.timeout_s &&
         x.memory_bytes == y.memory_bytes && x.output_bytes == y.output_bytes &&
         x.cpu_s == y.cpu_s && x.nproc == y.nproc && x.nofile == y.nofile &&
         x.fsize_bytes == y.fsize_bytes && x.tmpfs_bytes == y.tmpfs_bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): libFuzzer hands bytes
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = sandbox::ParseJson(text);
  if (!parsed.ok()) return 0;
  const LeftSession left = LeftFrom(*parsed);
  const AdoptionContext context = Context();

  auto decoded = DecodeRecord(left.record);
  if (RecordMatchesId(left.record, kId)) {
    FUZZ_CHECK(!decoded.ok() || decoded->key == SessionKey(kId), "a matching record has its key");
  }
  if (decoded.ok()) {
    const json signed_again = EncodeRecord(*decoded, kId);
    // It matches the id exactly when its key is that id's key.
    FUZZ_CHECK(RecordMatchesId(signed_again, kId) == (decoded->key == SessionKey(kId)),
               "a re-signed record matches the id of its key");
    auto again = DecodeRecord(signed_again);
    FUZZ_CHECK(again.ok() && SameRecord(*again, *decoded), "a re-signed record decodes equal");
  }

  const AdoptionDecision decision = DecideAdoption(left, context);
  FUZZ_CHECK(!decision.reason.empty(), "every decision says why");
  if (decision.adopt) {
    FUZZ_CHECK(decision.record.has_value() && decoded.ok(), "an adopted record decodes");
    const SessionRecord& record = *decision.record;
    FUZZ_CHECK(left.labels.at(std::string(kSessionKeyLabel)) == record.key, "key = label");
    auto pool = context.pools.find(record.pool);
    FUZZ_CHECK(pool != context.pools.end(), "a configured pool");
    auto carried = record.limits;
    carried.cpus = pool->second.cpus;
    carried.pids = pool->second.pids;
    FUZZ_CHECK(!sandbox::config::FirstLimitOver(carried, pool->second), "within max_limits");
    FUZZ_CHECK(record.created_unix_ms <= kNow + 60'000, "not created in the future");
    FUZZ_CHECK(left.idle_s < 300, "within the grace");
  }
  return 0;
}
