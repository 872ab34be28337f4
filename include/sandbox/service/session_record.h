// What survives a server restart of a session (sessions.restart_grace_s), and the decision
// whether a session container left by an earlier server is adopted or removed.
//
// Where each fact lives, and why:
//   - The container label io.sandbox-mcp.session-key holds SHA-256(session id), never the id
//     itself: labels are readable by anyone who can run `docker inspect`, and the id is the
//     session's only credential. The server finds a restored session by hashing the id a
//     client presents. The label is set by the server when the container is created (a warm
//     container is created for the id it will serve), cannot change, and cannot be read or
//     changed from inside the container.
//   - Everything else (owner, pool, creation time, limits) is decided only when the session is
//     created, after its warm container exists, and Docker cannot change a container's labels.
//     So it travels as the harness's session `record` (docs/harness-protocol.md), returned by
//     the harness when a later server attaches again, and carries an HMAC-SHA-256 keyed with
//     the session id: only a holder of the id (the server at creation, the client) can make a
//     valid one, and a restored record is trusted only once the id is presented and checks out.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/runner/sandbox.h"

namespace sandbox::service {

inline constexpr std::string_view kSessionKeyLabel = "io.sandbox-mcp.session-key";

// A new session id: 128 bits from the OS's CSPRNG, hex, after "<replica>-" when `replica`
// (server.replica) is not empty (core/replica_id.h). The prefix is part of the id: its key, the
// label and the record's MAC cover the whole id, so a restarted replica adopts its sessions as
// before, and an id with another replica's prefix matches no session here.
std::string NewSessionId(std::string_view replica);

// The lookup key of a session id: lower-case hex SHA-256 (64 characters).
std::string SessionKey(std::string_view session_id);
bool IsSessionKey(std::string_view text);

// A session's record as the manager rebuilds it.
struct SessionRecord {
  std::string key;  // SessionKey(id)
  std::string principal;
  std::string pool;
  std::int64_t created_unix_ms = 0;
  runner::RunLimits limits;
};

// The record for the harness: {"v":1, key, principal, pool, created_unix_ms, limits, mac}.
nlohmann::json EncodeRecord(const SessionRecord& record, std::string_view session_id);
// Reads a record's fields (any version-1 record of the right shape); does not check the MAC.
Result<SessionRecord> DecodeRecord(const nlohmann::json& record);
// True when `record` was made by EncodeRecord with this very id (its MAC and key match).
bool RecordMatchesId(const nlohmann::json& record, std::string_view session_id);

// A session container of this instance found at start-up, with what its harness answered to
// `resume`.
struct LeftSession {
  std::map<std::string, std::string> labels;
  nlohmann::json record;  // null: the container never served a session (a warm one)
  double idle_s = 0;      // how long no server had spoken to its harness
  int protocol = 0;
};

struct AdoptionContext {
  std::string instance_id;
  std::chrono::seconds grace{0};         // sessions.restart_grace
  std::chrono::seconds max_lifetime{0};  // sessions.max_lifetime
  // Configured pools by name, with their max_limits: a record asking more is not adopted.
  std::map<std::string, runner::RunLimits> pools;
  std::int64_t now_unix_ms = 0;
};

struct AdoptionDecision {
  bool adopt = false;
  std::string reason;                   // for the log
  std::optional<SessionRecord> record;  // set when adopted
};

// Checks the labels alone (before attaching): a session container of this instance with a
// session key. An error names what is wrong.
Status CheckSessionLabels(const std::map<std::string, std::string>& labels,
                          const std::string& instance_id);
// Adopts a container whose labels check out, whose harness speaks this server's protocol and
// holds a well-formed record of the same key, of a configured pool and within its max_limits,
// whose grace has not passed (idle_s below this server's grace) and whose session has not
// reached its lifetime. Nothing of the record is trusted yet (its MAC needs the session id), so
// a record that asks more than its pool allows is refused, never used.
AdoptionDecision DecideAdoption(const LeftSession& left, const AdoptionContext& context);

}  // namespace sandbox::service
