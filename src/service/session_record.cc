#include "sandbox/service/session_record.h"

#include <random>

#include "sandbox/config/limits_check.h"
#include "sandbox/core/json.h"
#include "sandbox/core/replica_id.h"
#include "sandbox/core/sha256.h"
#include "sandbox/runner/harness_sandbox.h"
#include "sandbox/runner/sandbox_spec.h"

namespace sandbox::service {
namespace {

using nlohmann::json;

constexpr int kRecordVersion = 1;

json RecordLimits(const runner::RunLimits& l) {
  return {{"timeout_s", l.timeout_s},
          {"memory_bytes", l.memory_bytes},
          {"output_bytes", l.output_bytes},
          {"cpu_s", l.cpu_s},
          {"nproc", l.nproc},
          {"nofile", l.nofile},
          {"fsize_bytes", l.fsize_bytes},
          {"tmpfs_bytes", l.tmpfs_bytes}};
}

// The bytes the MAC covers: the record without its mac, in nlohmann's sorted-key dump (the
// same on both sides, whatever order the members arrive in).
std::string Signed(json record) {
  record.erase("mac");
  return record.dump();
}

// Whole seconds for the log; idle_s is the harness's claim, so any double can arrive.
std::string WholeSeconds(double s) {
  if (!(s >= 0 && s < 1e15)) return "an unknown number of";
  return std::to_string(static_cast<std::int64_t>(s));
}

std::optional<std::int64_t> Int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  return JsonInteger(*it);
}

}  // namespace

std::string NewSessionId(std::string_view replica) {
  // std::random_device reads /dev/urandom with libstdc++.
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string random;
  for (int i = 0; i < 4; ++i) {
    auto word = rd();
    for (int j = 0; j < 8; ++j) {
      random.push_back(kHex[word & 0xF]);
      word >>= 4;
    }
  }
  return ReplicaId(replica, random);
}

std::string SessionKey(std::string_view session_id) { return Sha256Hex(session_id); }

bool IsSessionKey(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

json EncodeRecord(const SessionRecord& r, std::string_view session_id) {
  json record = {{"v", kRecordVersion},
                 {"key", r.key},
                 {"principal", r.principal},
                 {"pool", r.pool},
                 {"created_unix_ms", r.created_unix_ms},
                 {"limits", RecordLimits(r.limits)}};
  record["mac"] = HmacSha256Hex(session_id, Signed(record));
  return record;
}

Result<SessionRecord> DecodeRecord(const json& record) {
  auto bad = [](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "session record: " + why);
  };
  if (!record.is_object()) return bad("not an object");
  if (Int(record, "v") != kRecordVersion)
    return bad("not version " + std::to_string(kRecordVersion));
  SessionRecord r;
  auto str = [&](const char* key, std::string& out) {
    auto it = record.find(key);
    if (it == record.end() || !it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  std::string mac;
  if (!str("key", r.key) || !IsSessionKey(r.key)) return bad("no valid key");
  if (!str("principal", r.principal) || r.principal.empty()) return bad("no principal");
  if (!str("pool", r.pool) || r.pool.empty()) return bad("no pool");
  if (!str("mac", mac) || !IsSessionKey(mac)) return bad("no valid mac");
  auto created = Int(record, "created_unix_ms");
  if (!created || *created <= 0) return bad("no creation time");
  r.created_unix_ms = *created;
  auto limits = record.find("limits");
  if (limits == record.end() || !limits->is_object()) return bad("no limits");
  auto timeout = limits->find("timeout_s");
  if (timeout == limits->end() || !timeout->is_number() || !(timeout->get<double>() > 0)) {
    return bad("no timeout");
  }
  r.limits.timeout_s = timeout->get<double>();
  struct Field {
    const char* name;
    std::int64_t* out;
  };
  for (auto [name, out] :
       {Field{"memory_bytes", &r.limits.memory_bytes},
        Field{"output_bytes", &r.limits.output_bytes}, Field{"cpu_s", &r.limits.cpu_s},
        Field{"nproc", &r.limits.nproc}, Field{"nofile", &r.limits.nofile},
        Field{"fsize_bytes", &r.limits.fsize_bytes}, Field{"tmpfs_bytes", &r.limits.tmpfs_bytes}}) {
    auto value = Int(*limits, name);
    if (!value || *value < 0) return bad(std::string("no ") + name);
    *out = *value;
  }
  return r;
}

bool RecordMatchesId(const json& record, std::string_view session_id) {
  if (!record.is_object()) return false;
  auto mac = record.find("mac");
  auto key = record.find("key");
  if (mac == record.end() || !mac->is_string() || key == record.end() || !key->is_string()) {
    return false;
  }
  return ConstantTimeEquals(key->get<std::string>(), SessionKey(session_id)) &&
         ConstantTimeEquals(mac->get<std::string>(), HmacSha256Hex(session_id, Signed(record)));
}

Status CheckSessionLabels(const std::map<std::string, std::string>& labels,
                          const std::string& instance_id) {
  auto label = [&](std::string_view name) {
    auto it = labels.find(std::string(name));
    return it == labels.end() ? std::string() : it->second;
  };
  auto bad = [](const std::string& why) { return Error(ErrorCode::kInvalidArgument, why); };
  if (label(runner::kManagedLabel) != "true") return bad("not a sandbox-mcp container");
  if (label(runner::kInstanceLabel) != instance_id) {
    return bad("of instance \"" + label(runner::kInstanceLabel) + "\", not \"" + instance_id +
               "\"");
  }
  if (label(runner::kModeLabel) != "session") return bad("not a session container");
  if (!IsSessionKey(label(kSessionKeyLabel))) {
    return bad("no session key label (a server without restart grace made it)");
  }
  return OkStatus();
}

AdoptionDecision DecideAdoption(const LeftSession& left, const AdoptionContext& context) {
  AdoptionDecision d;
  auto remove = [&](std::string why) {
    d.reason = std::move(why);
    return d;
  };
  if (context.grace.count() <= 0) return remove("sessions.restart_grace_s is 0");
  if (auto labels = CheckSessionLabels(left.labels, context.instance_id); !labels.ok()) {
    return remove(labels.error().message());
  }
  if (left.protocol != runner::kHarnessProtocol) {
    return remove("its harness speaks protocol " + std::to_string(left.protocol) + ", not " +
                  std::to_string(runner::kHarnessProtocol));
  }
  if (left.record.is_null()) return remove("it never served a session (a warm container)");
  auto record = DecodeRecord(left.record);
  if (!record.ok()) return remove(record.error().message());
  if (record->key != left.labels.at(std::string(kSessionKeyLabel))) {
    return remove("its record's session key does not match its label");
  }
  // Written so that a NaN is beyond the grace too.
  if (!(left.idle_s < static_cast<double>(context.grace.count()))) {
    return remove("left " + WholeSeconds(left.idle_s) + " s ago, beyond the restart grace of " +
                  std::to_string(context.grace.count()) + " s");
  }
  auto pool = context.pools.find(record->pool);
  if (pool == context.pools.end()) {
    return remove("its pool \"" + record->pool + "\" is no longer configured");
  }
  // cpus and pids are not in a record (the container's own settings); only what it carries
  // is compared.
  runner::RunLimits carried = record->limits;
  carried.cpus = pool->second.cpus;
  carried.pids = pool->second.pids;
  if (auto field = config::FirstLimitOver(carried, pool->second)) {
    return remove("its record's " + std::string(*field) + " exceeds pool \"" + record->pool +
                  "\"'s max_limits." + std::string(*field));
  }
  const auto lifetime_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(context.max_lifetime).count();
  if (context.now_unix_ms - record->created_unix_ms >= lifetime_ms) {
    return remove("the session reached its maximum lifetime");
  }
  if (record->created_unix_ms > context.now_unix_ms + 60'000) {
    return remove("its record claims a creation time in the future");
  }
  d.adopt = true;
  d.reason = "left " + WholeSeconds(left.idle_s) + " s ago, within the restart grace";
  d.record = std::move(*record);
  return d;
}

}  // namespace sandbox::service
