// SessionTable: the transport sessions of an HTTP MCP transport by id (Mcp-Session-Id for
// Streamable HTTP, sessionId for legacy SSE), with what both transports keep of them: ids of 256
// random bits (after the replica's prefix when server.replica names one), a bound on all
// sessions and one on each principal's, idle expiry, and a lookup that answers a session of
// another principal exactly as an unknown id (so an id is of no use with another token and its
// existence is not revealed).
//
// The table never ends a session: Remove and TakeAll hand sessions out for the caller to End. A
// session it drops on its own (expired, or evicted for its principal's bound) has no call in
// flight and is not ended, so a request that found it just before still completes.
//
// Thread-safety: every method from any thread.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/core/random_id.h"
#include "sandbox/core/replica_id.h"
#include "sandbox/mcp/session.h"

namespace sandbox::transport {

struct SessionTableOptions {
  std::size_t max_sessions = 10000;  // Open beyond it: kFull
  // One principal's share of max_sessions: at it, Open evicts that principal's least recently
  // used session without a call in flight (whose id is then unknown), or refuses (kPrincipalBusy)
  // when every one of them has a call in flight. 0: no share.
  std::size_t max_sessions_per_principal = 1000;
  // A session unused this long without a call in flight is forgotten (at the next Open).
  // 0: never (a session lives until it is removed).
  std::chrono::seconds idle_ttl{3600};
  // The clock for idle expiry and eviction order; steady_clock::now when unset (tests pass a fake).
  std::function<std::chrono::steady_clock::time_point()> now;
  // server.replica: ids start with "<replica>-" (core/replica_id.h); "": no prefix.
  std::string replica;
};

// Why Open gave no session.
enum class SessionRefusal { kNone, kPrincipalBusy, kFull };

template <class S>
class SessionTable;

// What the table keeps of a session; a transport derives its own to add what it holds (a stream).
class TransportSession {
 public:
  TransportSession(std::string session_id, std::string principal)
      : id(std::move(session_id)), mcp(std::move(principal)) {}
  TransportSession(const TransportSession&) = delete;
  TransportSession& operator=(const TransportSession&) = delete;
  virtual ~TransportSession() = default;

  // Cancels its runs and refuses new ones (mcp::Session::End); a transport's own session also
  // ends what it holds (its stream).
  virtual void End() { mcp.End(); }

  const std::string id;
  mcp::Session mcp;  // its principal is the session's owner

 private:
  template <class S>
  friend class SessionTable;
  std::chrono::steady_clock::time_point last_used_;  // under the table's lock
};

template <class S>
class SessionTable {
  static_assert(std::derived_from<S, TransportSession>);

 public:
  struct Opened {
    std::shared_ptr<S> session;  // null when refused
    SessionRefusal refusal = SessionRefusal::kNone;
    std::size_t principal_sessions = 0;  // the principal's live sessions before this one
    // The principal's least recently used idle session was dropped to make room (also when
    // kFull then refused).
    bool evicted = false;
  };

  explicit SessionTable(SessionTableOptions options) : options_(std::move(options)) {
    if (!options_.now) options_.now = std::chrono::steady_clock::now;
  }
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;

  // A new session of `principal` under a fresh id, built as S(id, principal, args...); first
  // forgets the expired sessions, then applies the principal's share and the total bound.
  template <class... Args>
  Opened Open(std::string principal, Args&&... args) {
    Opened opened;
    std::lock_guard lock(mu_);
    const auto now = options_.now();
    std::shared_ptr<S> oldest_idle;  // the principal's least recently used without a call
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const S& s = *it->second;
      const bool idle = s.mcp.in_flight() == 0;  // no call in flight
      if (idle && Expired(s, now)) {
        it = sessions_.erase(it);
        continue;
      }
      if (s.mcp.principal() == principal) {
        ++opened.principal_sessions;
        if (idle && (!oldest_idle || s.last_used_ < oldest_idle->last_used_)) {
          oldest_idle = it->second;
        }
      }
      ++it;
    }
    const std::size_t share = options_.max_sessions_per_principal;
    if (share > 0 && opened.principal_sessions >= share) {
      if (!oldest_idle) {
        opened.refusal = SessionRefusal::kPrincipalBusy;
        return opened;
      }
      // A client that never ends its sessions loses its oldest idle one, not everyone else theirs.
      sessions_.erase(oldest_idle->id);
      opened.evicted = true;
    }
    if (sessions_.size() >= options_.max_sessions) {
      opened.refusal = SessionRefusal::kFull;
      return opened;
    }
    opened.session = std::make_shared<S>(ReplicaId(options_.replica, RandomHexId(32)),
                                         std::move(principal), std::forward<Args>(args)...);
    opened.session->last_used_ = now;
    sessions_.emplace(opened.session->id, opened.session);
    return opened;
  }

  // The session `id` if it belongs to `principal` (marked used now); null otherwise.
  std::shared_ptr<S> Find(const std::string& id, const std::string& principal) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->mcp.principal() != principal) return nullptr;
    it->second->last_used_ = options_.now();
    return it->second;
  }

  // Takes the session `id` out of the table; null when there is none.
  std::shared_ptr<S> Remove(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    auto session = std::move(it->second);
    sessions_.erase(it);
    return session;
  }

  // Takes every session out of the table (at shutdown).
  std::vector<std::shared_ptr<S>> TakeAll() {
    std::vector<std::shared_ptr<S>> all;
    std::lock_guard lock(mu_);
    all.reserve(sessions_.size());
    for (auto& [id, session] : sessions_) all.push_back(std::move(session));
    sessions_.clear();
    return all;
  }

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return sessions_.size();
  }

  const SessionTableOptions& options() const { return options_; }

 private:
  bool Expired(const S& s, std::chrono::steady_clock::time_point now) const {
    return options_.idle_ttl.count() > 0 && now - s.last_used_ > options_.idle_ttl;
  }

  SessionTableOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<S>> sessions_;
};

}  // namespace sandbox::transport
