#include "sandbox/service/session_manager.h"

#include <algorithm>
#include <string>
#include <utility>

#include "sandbox/core/log_safe.h"
#include "sandbox/runner/sandbox_spec.h"
#include "sandbox/service/session_record.h"

namespace sandbox::service {
namespace {

using pool::Clock;

Error Invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

std::int64_t Ms(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

std::int64_t UnixMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Calls after this much idle time check the container first.
constexpr auto kPingIdle = std::chrono::seconds(1);

// How long a shutdown that leaves sessions running waits for a cancelled call to end.
constexpr auto kLeaveWait = std::chrono::seconds(5);

// What a session whose container failed is told; names the engine the container was on (with
// several engines, one lost takes its sessions' containers with it).
std::string RestartedEmpty(const std::string& engine) {
  return "the session's container (engine " + engine +
         ") failed and was replaced: the session was restarted empty (variables and files are "
         "gone)";
}

}  // namespace

struct SessionManager::Session {
  std::string id;         // empty for a restored session until its owner presents the id
  std::string key;        // SessionKey(id): sessions_'s key
  nlohmann::json record;  // a restored session's record (session_record.h) until then
  std::string principal;
  std::string pool;
  runner::RunLimits limits;
  // The session's narrowing of its pool's network policy (unset: the pool's own).
  std::optional<config::NetworkPolicy> network;
  std::int64_t created_unix_ms = 0;
  Clock::time_point created;

  std::timed_mutex call_mu;  // held by the one call using the session's sandbox

  std::mutex state_mu;  // guards everything below
  SandboxLease lease;   // empty while the session needs a new sandbox
  // A sandbox not lent by a pool: adopted from an earlier server, or started for this session
  // (a replacement whose container must carry the session's key). At most one of the two.
  std::unique_ptr<runner::Sandbox> own;
  Clock::time_point last_contact;  // the last call or ping (keepalive of the watchdog)
  bool busy = false;
  bool closed = false;
  Clock::time_point last_used;
  int runs = 0;
  int restarts = 0;
  std::optional<std::int64_t> memory_bytes;
  std::string pending_notice;                      // a restart to report with the next run
  std::shared_ptr<exec::CancelToken> close_token;  // of the call in progress

  runner::Sandbox* sandbox() const { return own ? own.get() : lease.get(); }
  // Destroys the sandbox (its container) unless it was left to run on (Sandbox::Leave).
  void ResetSandbox() {
    lease.Reset();
    own.reset();
  }
  // Its name in logs: SessionDigest(id) (core/log_safe.h), which its key begins with, so
  // a session adopted by key alone has the same name as before the restart.
  std::string LogName() const { return key.substr(0, 16); }
};

// Holds a session exclusively for one call: the only way to reach its sandbox. A session
// closed meanwhile is reported as not found; a session closed during the call has its
// container destroyed when the call ends.
class SessionManager::Call {
 public:
  static Result<Call> Begin(std::shared_ptr<Session> session, std::chrono::milliseconds wait) {
    std::unique_lock<std::timed_mutex> lock(session->call_mu, std::defer_lock);
    if (!lock.try_lock_for(wait)) {
      return Error(ErrorCode::kBusy, "session " + session->id +
                                         " is still running another call; try again when it "
                                         "has finished");
    }
    {
      std::lock_guard state(session->state_mu);
      if (session->closed) {
        return Error(ErrorCode::kNotFound, "session " + session->id + " has been closed");
      }
      session->busy = true;
      session->close_token = std::make_shared<exec::CancelToken>();
    }
    return Call(std::move(session), std::move(lock));
  }

  Call(Call&&) = default;
  Call& operator=(Call&&) = delete;
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  ~Call() {
    if (!session_) return;
    std::lock_guard state(session_->state_mu);
    session_->busy = false;
    session_->last_contact = Clock::now();
    if (touch_) session_->last_used = session_->last_contact;
    session_->close_token.reset();
    if (session_->closed) session_->ResetSandbox();
  }

  Session& session() const { return *session_; }
  // This call is not a use of the session (a listing): its idle clock keeps running.
  void DoNotTouch() { touch_ = false; }
  std::shared_ptr<exec::CancelToken> close_token() const {
    std::lock_guard state(session_->state_mu);
    return session_->close_token;
  }

 private:
  Call(std::shared_ptr<Session> session, std::unique_lock<std::timed_mutex> lock)
      : session_(std::move(session)), lock_(std::move(lock)) {}

  std::shared_ptr<Session> session_;
  std::unique_lock<std::timed_mutex> lock_;
  bool touch_ = true;
};

SessionManager::SessionManager(const config::Config& config, const RequestResolver& resolver,
                               std::shared_ptr<spdlog::logger> logger)
    : config_(config), resolver_(resolver), logger_(std::move(logger)) {}

std::unique_ptr<SessionManager> SessionManager::Create(const config::Config& config,
                                                       const RequestResolver& resolver,
                                                       const MakerFactory& make,
                                                       const ServiceOptions& options,
                                                       std::shared_ptr<spdlog::logger> logger) {
  std::unique_ptr<SessionManager> manager(new SessionManager(config, resolver, std::move(logger)));
  manager->pools_ = BuildPools(config, PoolPurpose::kSessions, options, make, manager->logger_);
  return manager;
}

Result<std::unique_ptr<SessionManager>> SessionManager::Create(
    const config::Config& config, const engine::ContainerEngine& engine,
    const SandboxService& service, const ServiceOptions& options,
    std::shared_ptr<spdlog::logger> logger) {
  auto make = HarnessSandboxMaker::On(engine, logger, options.egress);
  return Create(config, service.resolver(), make, options, std::move(logger));
}

SessionManager::~SessionManager() { Shutdown(); }

void SessionManager::Start() {
  for (auto& [name, entry] : pools_) entry.pool->Start();
  std::lock_guard lock(mu_);
  if (stopping_ || expiry_.joinable()) return;
  expiry_ = std::thread([this] { ExpiryLoop(); });
}

void SessionManager::Shutdown(bool leave_sessions) {
  const bool leave = leave_sessions && config_.sessions.restart_grace.count() > 0;
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, s] : sessions_) all.push_back(s);
    sessions_.clear();
  }
  stop_cv_.notify_all();
  if (expiry_.joinable() && expiry_.get_id() != std::this_thread::get_id()) expiry_.join();
  if (leave) {
    // Every call in progress is cancelled at once, so the waits below overlap.
    for (auto& s : all) {
      std::lock_guard state(s->state_mu);
      if (s->close_token) s->close_token->Cancel();
    }
  }
  // A session of a pool with a network policy is not left: its proxy ends with this server and
  // the next one would not adopt it (docs/network.md, "Sessions").
  auto networked = [this](const Session& s) {
    const auto* pool = config::FindPool(config_, s.pool);
    return pool != nullptr && pool->network.mode != config::NetworkPolicy::Mode::kNone;
  };
  for (auto& s : all) {
    if (leave && !networked(*s)) {
      // A cancelled call ends within about a second (the harness answers the cancel, or the
      // container is killed); then the session's container is left for the next server.
      std::unique_lock call(s->call_mu, std::defer_lock);
      if (call.try_lock_for(kLeaveWait)) {
        std::lock_guard state(s->state_mu);
        s->closed = true;
        auto* sandbox = s->sandbox();
        if (sandbox != nullptr && sandbox->Reusable()) {
          sandbox->Leave();
          if (logger_) {
            logger_->info(
                "session {}: container {} left running for the next server of instance \"{}\" "
                "(restart grace {} s)",
                s->LogName(), sandbox->Name(), config_.instance_id,
                config_.sessions.restart_grace.count());
          }
        }
        s->ResetSandbox();
        continue;
      }
    }
    std::lock_guard state(s->state_mu);
    s->closed = true;
    if (s->close_token) s->close_token->Cancel();
    if (!s->busy) s->ResetSandbox();
  }
  for (auto& [name, entry] : pools_) entry.pool->Shutdown();
}

int SessionManager::Adopt(const std::vector<engine::Listed>& left) {
  AdoptionContext context;
  context.instance_id = config_.instance_id;
  context.grace = config_.sessions.restart_grace;
  context.max_lifetime = config_.sessions.max_lifetime;
  for (const auto& pool : config_.pools) {
    if (pools_.contains(pool.name)) context.pools.emplace(pool.name, pool.max_limits);
  }
  int adopted = 0;
  for (const auto& c : left) {
    const std::string name = c.id.substr(0, 12);
    auto removed = [&](const std::string& why) {
      if (logger_) {
        logger_->info("removed session container {} left by an earlier run of instance \"{}\": {}",
                      name, config_.instance_id, LogEscape(why, 1024));
      }
    };
    auto pool_label = c.labels.find(std::string(runner::kPoolLabel));
    auto entry = pool_label == c.labels.end() ? pools_.end() : pools_.find(pool_label->second);
    if (entry == pools_.end() || context.grace.count() <= 0) {
      if (!pools_.empty()) pools_.begin()->second.maker->Remove(c);
      removed(context.grace.count() <= 0 ? "sessions.restart_grace_s is 0"
                                         : "its pool is not configured");
      continue;
    }
    // Owned from here on: every path that does not adopt it removes it.
    auto sandbox = entry->second.maker->Adopt(c);
    if (!sandbox.ok()) {
      removed(sandbox.error().message());
      continue;
    }
    auto resumed = (*sandbox)->Resume();
    if (!resumed.ok()) {
      removed("its harness did not answer: " + resumed.error().message());
      continue;
    }
    LeftSession found;
    found.labels = c.labels;
    found.record = std::move(resumed->record);
    found.idle_s = resumed->idle_s;
    found.protocol = resumed->protocol;
    context.now_unix_ms = UnixMsNow();
    auto decision = DecideAdoption(found, context);
    std::lock_guard lock(mu_);
    if (decision.adopt && sessions_.contains(decision.record->key)) {
      decision = {false, "another container holds the same session", std::nullopt};
    }
    if (decision.adopt && static_cast<int>(sessions_.size()) >= config_.sessions.max_total) {
      decision = {false, "sessions.max_total is reached", std::nullopt};
    }
    // From now on this server's grace bounds the container.
    if (decision.adopt) {
      runner::SessionTerms terms;
      terms.watchdog = config_.sessions.restart_grace;
      if (auto begun = (*sandbox)->BeginSession(decision.record->limits, terms); !begun.ok()) {
        decision = {false, begun.error().message(), std::nullopt};
      }
    }
    if (!decision.adopt) {
      sandbox->reset();
      removed(decision.reason);
      continue;
    }
    const auto& record = *decision.record;
    auto s = std::make_shared<Session>();
    s->key = record.key;
    s->record = std::move(found.record);
    s->principal = record.principal;
    s->pool = record.pool;
    s->limits = record.limits;
    s->created_unix_ms = record.created_unix_ms;
    // Lifetime continues from the creation time; the idle clock starts again now.
    const auto now = Clock::now();
    s->created = now - std::chrono::milliseconds(context.now_unix_ms - record.created_unix_ms);
    s->last_used = s->last_contact = now;
    s->own = std::move(*sandbox);
    sessions_.emplace(s->key, s);
    ++stats_.restored_total;
    ++adopted;
    if (logger_) {
      logger_->info(
          "adopted session container {} (session {} of \"{}\" in pool {}, created {} s ago): {}",
          name, s->LogName(), LogEscape(record.principal), LogEscape(record.pool),
          (context.now_unix_ms - record.created_unix_ms) / 1000, decision.reason);
    }
  }
  return adopted;
}

runner::SessionTerms SessionManager::TermsOf(const Session& session) const {
  const auto grace = config_.sessions.restart_grace;
  if (grace.count() <= 0) return {};
  SessionRecord record;
  record.key = session.key;
  record.principal = session.principal;
  record.pool = session.pool;
  record.created_unix_ms = session.created_unix_ms;
  record.limits = session.limits;
  return {EncodeRecord(record, session.id), grace};
}

std::chrono::milliseconds SessionManager::KeepAliveInterval() const {
  const auto third =
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.sessions.restart_grace) / 3;
  return std::clamp<std::chrono::milliseconds>(third, std::chrono::milliseconds(500),
                                               std::chrono::seconds(10));
}

void SessionManager::KeepAlive() {
  const auto interval = KeepAliveInterval();
  const auto now = Clock::now();
  std::vector<std::shared_ptr<Session>> due;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, s] : sessions_) {
      std::lock_guard state(s->state_mu);
      if (!s->busy && now - s->last_contact >= interval) due.push_back(s);
    }
  }
  for (auto& s : due) {
    // A busy session is in contact anyway; a ping is no use of the session (idle clock).
    auto call = Call::Begin(s, std::chrono::milliseconds(0));
    if (!call.ok()) continue;
    call->DoNotTouch();
    auto* sandbox = s->sandbox();
    if (sandbox != nullptr && sandbox->Reusable()) (void)sandbox->Ping();
  }
}

int SessionManager::DropWarmOn(const std::string& engine) {
  return RetireIdleOn(pools_, engine, EngineExit::kLeave, "engine " + engine + " is down");
}

SessionManager::Stats SessionManager::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.active = static_cast<int>(sessions_.size());
  return s;
}

Result<std::shared_ptr<SessionManager::Session>> SessionManager::Find(const std::string& principal,
                                                                      const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(SessionKey(id));
  bool found = it != sessions_.end() && it->second->principal == principal;
  if (found && it->second->id.empty()) {
    // A restored session, presented for the first time: its record must be the one made
    // with this very id (the principal above came from it).
    auto& s = *it->second;
    if (RecordMatchesId(s.record, id)) {
      s.id = id;
      s.record = nullptr;
      if (logger_) logger_->info("restored session {} is served again", s.LogName());
    } else {
      found = false;
      if (logger_) {
        logger_->warn("restored session {}: its record does not match the id presented",
                      s.LogName());
      }
    }
  }
  // A foreign session looks exactly like a missing one: ids cannot be probed across tokens.
  if (!found) {
    return Error(
        ErrorCode::kNotFound,
        "no session \"" + id + "\": it never existed, was closed, or ended (sessions end after " +
            std::to_string(config_.sessions.idle_timeout.count()) + " s without a call or " +
            std::to_string(config_.sessions.max_lifetime.count()) +
            " s after creation); create a new one with session_create");
  }
  return it->second;
}

Status SessionManager::Attach(Session& session) {
  auto it = pools_.find(session.pool);
  if (it == pools_.end()) return Error(ErrorCode::kInternal, "session pool disappeared");
  // An idle container can die between two health checks of its pool; the lease then fails
  // at once and a second one is tried (the dead one is destroyed when its lease ends).
  const bool keyed = config_.sessions.restart_grace.count() > 0;
  const bool fresh = session.id.empty();
  if (keyed && !fresh) {
    // A replacement: a warm container carries another session's key in its label, which
    // cannot change, so one is started for this session's id (cold: seconds).
    auto sandbox = it->second.maker->StartForSession(session.id);
    if (!sandbox.ok()) return sandbox.error().WithContext("start a container for the session");
    SANDBOX_RETURN_IF_ERROR((*sandbox)->BeginSession(session.limits, TermsOf(session)));
    if (session.network) SANDBOX_RETURN_IF_ERROR((*sandbox)->SetNetwork(&*session.network));
    std::lock_guard state(session.state_mu);
    session.own = std::move(*sandbox);
    session.last_contact = Clock::now();
    return OkStatus();
  }
  Status last = OkStatus();
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto lease = it->second.pool->Acquire(std::nullopt, session.principal);
    if (!lease.ok()) return lease.error().WithContext("start a container for the session");
    lease->Discard();  // never back to a pool, whatever happens
    runner::Sandbox* sandbox = lease->get();
    if (fresh) {
      // The id its container was made for (its label holds the id's key), when it has one.
      session.id = sandbox->session_id().empty() ? NewSessionId(config_.server.replica)
                                                 : sandbox->session_id();
      session.key = SessionKey(session.id);
    }
    last = sandbox->BeginSession(session.limits, TermsOf(session));
    // For the session's whole life: its sandbox never returns to a pool.
    if (last.ok() && session.network) last = sandbox->SetNetwork(&*session.network);
    if (last.ok()) {
      std::lock_guard state(session.state_mu);
      session.lease = std::move(*lease);
      session.last_contact = Clock::now();
      return OkStatus();
    }
    if (sandbox->Reusable()) break;  // the harness refused: another container would too
  }
  return last;
}

Status SessionManager::EnsureSandbox(Session& session) {
  bool lost_silently = false;
  {
    std::lock_guard state(session.state_mu);
    auto* sandbox = session.sandbox();
    // A container that died while idle (killed, the engine restarted) would fail the call;
    // a ping (about a millisecond) finds out first, so the call runs in a fresh one instead.
    if (sandbox != nullptr && sandbox->Reusable() && Clock::now() - session.last_used > kPingIdle) {
      (void)sandbox->Ping();
    }
    if (sandbox != nullptr && sandbox->Reusable()) return OkStatus();
    // A lease still held means the loss was not reported yet (it was found by a ping); an
    // empty one was reported with the call that lost it.
    lost_silently = sandbox != nullptr;
    const std::string engine = sandbox != nullptr ? sandbox->engine() : std::string();
    session.ResetSandbox();
    if (lost_silently) {
      ++session.restarts;
      session.pending_notice = RestartedEmpty(engine);
    }
  }
  return Attach(session);
}

template <typename Op>
auto SessionManager::WithSandbox(const std::shared_ptr<Session>& s, Op op)
    -> decltype(op(std::declval<runner::Sandbox&>())) {
  auto call = Call::Begin(s, config_.sessions.busy_wait);
  if (!call.ok()) return call.error();
  SANDBOX_RETURN_IF_ERROR(EnsureSandbox(*s));
  runner::Sandbox* sandbox = s->sandbox();
  auto reply = op(*sandbox);
  if (reply.ok()) {
    // An interpreter restart while idle shows up here too; keep it for the next run.
    if (auto notice = sandbox->TakeSessionNotice(); !notice.empty()) {
      std::lock_guard state(s->state_mu);
      s->pending_notice = notice;
    }
    return reply;
  }
  if (sandbox->Reusable()) return reply.error();
  const std::string restarted = RestartedEmpty(sandbox->engine());
  {
    std::lock_guard state(s->state_mu);
    s->ResetSandbox();
    ++s->restarts;
  }
  return Error(ErrorCode::kUnavailable, reply.error().message() + "; " + restarted);
}

Result<exec::SessionInfo> SessionManager::Create(const std::string& principal,
                                                 const exec::SessionCreateRequest& request) {
  auto limits = resolver_.Resolve(request.pool, request.limits);
  if (!limits.ok()) return limits.error();
  auto network = resolver_.ResolveNetwork(request.pool, request.network);
  if (!network.ok()) return network.error();
  const std::string pool_name = request.pool.empty() ? config_.default_pool : request.pool;
  const auto& sc = config_.sessions;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Error(ErrorCode::kUnavailable, "the server is shutting down");
    int mine = creating_by_principal_[principal];
    for (const auto& [id, s] : sessions_) mine += s->principal == principal ? 1 : 0;
    if (static_cast<int>(sessions_.size()) + creating_ >= sc.max_total) {
      return Error(ErrorCode::kLimit,
                   "the server's limit of " + std::to_string(sc.max_total) +
                       " sessions is reached; close a session you no longer need (session_close) "
                       "or try again later");
    }
    if (mine >= sc.max_per_principal) {
      return Error(ErrorCode::kLimit,
                   "your limit of " + std::to_string(sc.max_per_principal) +
                       " sessions is reached; close one you no longer need (session_close; "
                       "session_list shows them)");
    }
    ++creating_;
    ++creating_by_principal_[principal];
  }
  auto session = std::make_shared<Session>();
  session->principal = principal;  // the id comes with its container (Attach)
  session->pool = pool_name;
  session->limits = *limits;
  session->network = *network;
  session->created = session->last_used = Clock::now();
  session->created_unix_ms = UnixMsNow();
  auto attached = Attach(*session);
  std::lock_guard lock(mu_);
  --creating_;
  if (--creating_by_principal_[principal] == 0) creating_by_principal_.erase(principal);
  if (!attached.ok()) return attached.error();
  if (stopping_) {
    std::lock_guard state(session->state_mu);
    session->ResetSandbox();
    return Error(ErrorCode::kUnavailable, "the server is shutting down");
  }
  sessions_.emplace(session->key, session);
  ++stats_.created_total;
  if (logger_) {
    logger_->info("session {} created for \"{}\" in pool {}", session->LogName(), principal,
                  pool_name);
  }
  return Snapshot(*session);
}

exec::SessionInfo SessionManager::Snapshot(Session& s) {
  exec::SessionInfo info;
  const auto now = Clock::now();
  std::lock_guard state(s.state_mu);
  info.id = s.id;
  info.pool = s.pool;
  info.created_unix_ms = s.created_unix_ms;
  info.age_ms = Ms(now - s.created);
  info.busy = s.busy;
  info.idle_ms = s.busy ? 0 : Ms(now - s.last_used);
  const auto idle_left = Ms(config_.sessions.idle_timeout) - info.idle_ms;
  const auto life_left = Ms(config_.sessions.max_lifetime) - info.age_ms;
  info.expires_in_ms = std::max<std::int64_t>(0, std::min(idle_left, life_left));
  info.runs = s.runs;
  info.restarts = s.restarts;
  info.memory_bytes = s.memory_bytes;
  info.memory_limit_bytes = s.limits.memory_bytes;
  info.timeout_s = s.limits.timeout_s;
  info.output_bytes = s.limits.output_bytes;
  return info;
}

Result<std::vector<exec::SessionInfo>> SessionManager::List(const std::string& principal) {
  std::vector<std::shared_ptr<Session>> mine;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, s] : sessions_) {
      // A restored session is listed once its owner has used it again: until then its id is
      // not known here, only the id's hash.
      if (s->principal == principal && !s->id.empty()) mine.push_back(s);
    }
  }
  std::sort(mine.begin(), mine.end(),
            [](const auto& a, const auto& b) { return a->created < b->created; });
  std::vector<exec::SessionInfo> out;
  for (auto& s : mine) {
    // Memory use from the harness's pong, for sessions not busy now (a busy one keeps its
    // last reading rather than making the list wait).
    if (auto call = Call::Begin(s, std::chrono::milliseconds(0)); call.ok()) {
      call->DoNotTouch();  // listing must not keep an idle session alive
      auto* sandbox = s->sandbox();
      if (sandbox != nullptr && sandbox->Reusable()) {
        auto ping = sandbox->Ping();
        std::lock_guard state(s->state_mu);
        if (ping.ok()) s->memory_bytes = ping->memory_bytes;
      }
    }
    out.push_back(Snapshot(*s));
  }
  return out;
}

Result<exec::SessionInfo> SessionManager::Get(const std::string& principal,
                                              const std::string& session_id) {
  auto s = Find(principal, session_id);
  if (!s.ok()) return s.error();
  return Snapshot(**s);
}

void SessionManager::Remove(const std::string& key, const char* why) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(key);
    if (it == sessions_.end()) return;
    s = it->second;
    sessions_.erase(it);
  }
  std::lock_guard state(s->state_mu);
  s->closed = true;
  // A call in progress is cancelled and destroys the container when it ends.
  if (s->close_token) s->close_token->Cancel();
  if (!s->busy) s->ResetSandbox();
  if (logger_) logger_->info("session {} ended: {}", s->LogName(), why);
}

Status SessionManager::Close(const std::string& principal, const std::string& session_id) {
  auto s = Find(principal, session_id);
  if (!s.ok()) return s.error();
  Remove(SessionKey(session_id), "closed by its owner");
  return OkStatus();
}

void SessionManager::ExpiryLoop() {
  const bool keep_alive = config_.sessions.restart_grace.count() > 0;
  const auto period =
      std::min<std::chrono::milliseconds>(std::chrono::seconds(1), KeepAliveInterval());
  std::unique_lock lock(mu_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, period);
    if (stopping_) break;
    if (keep_alive) {
      lock.unlock();
      KeepAlive();
      lock.lock();
      if (stopping_) break;
    }
    const auto now = Clock::now();
    std::vector<std::pair<std::string, const char*>> expired;
    for (const auto& [id, s] : sessions_) {
      std::lock_guard state(s->state_mu);
      if (now - s->created >= config_.sessions.max_lifetime) {
        expired.emplace_back(id, "reached its maximum lifetime");
      } else if (!s->busy && now - s->last_used >= config_.sessions.idle_timeout) {
        expired.emplace_back(id, "idle timeout");
      }
    }
    if (expired.empty()) continue;
    stats_.expired_total += expired.size();
    lock.unlock();
    for (const auto& [id, why] : expired) Remove(id, why);
    lock.lock();
  }
}

Result<exec::RunResult> SessionManager::Run(const std::string& principal,
                                            const std::string& session_id,
                                            const exec::RunRequest& request,
                                            exec::RunObserver& observer,
                                            const exec::CancelToken& cancel) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  if (!request.pool.empty() && request.pool != s->pool) {
    return Invalid("pool: session " + s->id + " belongs to pool \"" + s->pool +
                   "\"; omit pool in a session call");
  }
  if (request.limits.memory_bytes) {
    return Invalid("memory_bytes: a session's memory limit is fixed when it is created (" +
                   std::to_string(s->limits.memory_bytes) +
                   " bytes); create a new session to change it");
  }
  SANDBOX_RETURN_IF_ERROR(resolver_.CheckFiles(request.files));
  auto resolved = resolver_.Resolve(s->pool, request.limits);
  if (!resolved.ok()) return resolved.error();
  runner::RunLimits limits = s->limits;
  if (request.limits.timeout_s) limits.timeout_s = resolved->timeout_s;
  if (request.limits.output_bytes) limits.output_bytes = resolved->output_bytes;
  // A call may narrow the session's network from now on, never widen it.
  auto network = resolver_.ResolveNetwork(s->pool, request.network);
  if (!network.ok()) return network.error();

  auto call = Call::Begin(s, config_.sessions.busy_wait);
  if (!call.ok()) return call.error();
  SANDBOX_RETURN_IF_ERROR(EnsureSandbox(*s));
  if (*network) {
    config::NetworkPolicy narrowed = **network;
    {
      std::lock_guard state(s->state_mu);
      if (s->network) {
        if (auto within = config::CheckNarrows(*s->network, narrowed); !within.ok()) {
          return Invalid("network: the session's network is narrower already: " +
                         within.error().message());
        }
        narrowed = config::Narrowed(*s->network, narrowed);
      }
    }
    SANDBOX_RETURN_IF_ERROR(s->sandbox()->SetNetwork(&narrowed));
    std::lock_guard state(s->state_mu);
    s->network = std::move(narrowed);
  }
  std::string notice;
  {
    std::lock_guard state(s->state_mu);
    notice = std::exchange(s->pending_notice, {});
  }
  runner::Sandbox* sandbox = s->sandbox();
  auto token = call->close_token();
  cancel.OnCancel([token] { token->Cancel(); });
  if (cancel.IsCancelled()) token->Cancel();
  exec::RunResult result = sandbox->Run(request.code, request.files, limits, observer, *token);
  result.session_id = s->id;
  result.pool = s->pool;
  std::string idle_notice = sandbox->TakeSessionNotice();
  if (!idle_notice.empty()) notice = notice.empty() ? idle_notice : notice + "; " + idle_notice;
  bool restarted = result.session_reset;
  if (!sandbox->Reusable()) {
    // The container itself failed (killed at the deadline backstop, the zygote died): the
    // next call gets a fresh one, so the session is restarted empty either way.
    restarted = true;
    result.session_reset = true;
    const std::string restarted_empty = RestartedEmpty(sandbox->engine());
    result.detail += result.detail.empty() ? restarted_empty : "; " + restarted_empty;
    std::lock_guard state(s->state_mu);
    s->ResetSandbox();
  }
  result.session_notice = notice;
  {
    std::lock_guard state(s->state_mu);
    ++s->runs;
    if (restarted) ++s->restarts;
    if (s->closed)
      result.detail += result.detail.empty() ? "the session was closed during the run"
                                             : "; the session was closed during the run";
  }
  if (restarted) {
    std::lock_guard lock(mu_);
    ++stats_.restarts_total;
  }
  return result;
}

Result<std::vector<exec::SessionFile>> SessionManager::PutFiles(
    const std::string& principal, const std::string& session_id,
    const std::vector<exec::InputFile>& files) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  if (files.empty()) return Invalid("files: at least one file is required");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto size = static_cast<std::int64_t>(files[i].content.size());
    if (size > config_.sessions.max_file_bytes) {
      return Error(ErrorCode::kLimit,
                   "files[" + std::to_string(i) + "] (" + files[i].path + ") is " +
                       std::to_string(size) + " bytes, more than the limit of " +
                       std::to_string(config_.sessions.max_file_bytes) + " bytes per file");
    }
    total += size;
  }
  if (total > config_.sessions.max_upload_bytes) {
    return Error(ErrorCode::kLimit, "the files are " + std::to_string(total) +
                                        " bytes together, more than the limit of " +
                                        std::to_string(config_.sessions.max_upload_bytes) +
                                        " bytes per upload");
  }
  SANDBOX_RETURN_IF_ERROR(resolver_.CheckFiles(files));
  return WithSandbox(s, [&files](runner::Sandbox& sandbox) { return sandbox.PutFiles(files); });
}

Result<exec::SessionFileList> SessionManager::ListFiles(const std::string& principal,
                                                        const std::string& session_id) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  return WithSandbox(s, [](runner::Sandbox& sandbox) { return sandbox.ListFiles(); });
}

Result<exec::OutputFile> SessionManager::GetFile(const std::string& principal,
                                                 const std::string& session_id,
                                                 const std::string& path) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  SANDBOX_RETURN_IF_ERROR(RequestResolver::CheckPath("path", path));
  const std::int64_t max_bytes = config_.sessions.max_file_bytes;
  return WithSandbox(s, [&](runner::Sandbox& sandbox) { return sandbox.GetFile(path, max_bytes); });
}

Status SessionManager::DeleteFile(const std::string& principal, const std::string& session_id,
                                  const std::string& path) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  SANDBOX_RETURN_IF_ERROR(RequestResolver::CheckPath("path", path));
  return WithSandbox(s, [&path](runner::Sandbox& sandbox) { return sandbox.DeleteFile(path); });
}

std::vector<std::pair<std::string, pool::PoolStats>> SessionManager::PoolStats() const {
  std::vector<std::pair<std::string, pool::PoolStats>> out;
  for (const auto& [name, entry] : pools_)
    out.emplace_back(entry.pool->options().name, entry.pool->stats());
  return out;
}

}  // namespace sandbox::service
