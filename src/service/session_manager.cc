#include "sandbox/service/session_manager.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/core/json.h"
#include "sandbox/runner/harness_sandbox.h"
#include "sandbox/runner/result_checks.h"

namespace sandbox::service {
namespace {

using nlohmann::json;
using pool::Clock;

Error Invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

// 128 bits from the OS's CSPRNG (std::random_device reads /dev/urandom with libstdc++), hex.
std::string NewSessionId() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    auto word = rd();
    for (int j = 0; j < 8; ++j) {
      id.push_back(kHex[word & 0xF]);
      word >>= 4;
    }
  }
  return id;
}

std::int64_t Ms(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

std::int64_t UnixMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string JsonStr(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t JsonI64(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() ? JsonInteger(*it).value_or(0) : 0;
}

exec::SessionFile ParseFileEntry(const json& j) {
  exec::SessionFile f;
  f.path = JsonStr(j, "path");
  f.size = JsonI64(j, "size");
  f.mime_type = JsonStr(j, "mime_type");
  if (auto it = j.find("mtime"); it != j.end() && it->is_number())
    f.mtime_unix_s = it->get<double>();
  return f;
}

// Calls after this much idle time check the container first.
constexpr auto kPingIdle = std::chrono::seconds(1);

constexpr const char* kRestartedEmpty =
    "the session's container failed and was replaced: the session was restarted empty "
    "(variables and files are gone)";

}  // namespace

struct SessionManager::Session {
  std::string id;
  std::string principal;
  std::string pool;
  runner::RunLimits limits;
  std::int64_t created_unix_ms = 0;
  Clock::time_point created;

  std::timed_mutex call_mu;  // held by the one call using the session's sandbox

  std::mutex state_mu;  // guards everything below
  pool::Lease lease;    // empty while the session needs a new sandbox
  bool busy = false;
  bool closed = false;
  Clock::time_point last_used;
  int runs = 0;
  int restarts = 0;
  std::optional<std::int64_t> memory_bytes;
  std::string pending_notice;                      // a restart to report with the next run
  std::shared_ptr<exec::CancelToken> close_token;  // of the call in progress

  runner::HarnessSandbox* sandbox() const {
    return static_cast<runner::HarnessSandbox*>(lease.get());
  }
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
    if (touch_) session_->last_used = Clock::now();
    session_->close_token.reset();
    if (session_->closed) session_->lease.Reset();
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

SessionManager::SessionManager(const config::Config& config, const SandboxService& service,
                               std::shared_ptr<spdlog::logger> logger)
    : config_(config), service_(service), logger_(std::move(logger)) {}

Result<std::unique_ptr<SessionManager>> SessionManager::Create(
    const config::Config& config, const docker::Client& client, const SandboxService& service,
    const ServiceOptions& options, std::shared_ptr<spdlog::logger> logger) {
  std::unique_ptr<SessionManager> manager(new SessionManager(config, service, std::move(logger)));
  for (const auto& pc : config.pools) {
    runner::SandboxSetup setup;
    setup.pool = pc;
    setup.output = config.output;
    setup.container_seccomp_json = options.container_seccomp_json;
    setup.run_filter_bpf = options.run_filter_bpf;
    setup.instance_id = config.instance_id;
    setup.extra_labels = options.container_labels;
    setup.input = options.input;
    setup.session = true;
    pool::PoolOptions po = pool::PoolOptionsFromConfig(pc);
    po.name = pc.name + "/sessions";
    if (options.pool_hooks) po.hooks = options.pool_hooks(po.name);
    // A session's container is its own: lent once, destroyed when the session ends.
    po.mode = config::PoolMode::kFresh;
    po.max_total = std::max(1, config.sessions.max_total);
    po.min_idle = pc.name == config.default_pool ? std::min(config.sessions.warm, po.max_total) : 0;
    po.max_concurrent_starts = std::min(pc.max_concurrent_starts, po.max_total);
    // Creating a session may wait for a cold start (imports and a warm-up plot: seconds).
    po.acquire_timeout =
        std::max<std::chrono::milliseconds>(pc.acquire_timeout, std::chrono::seconds(60));
    PoolEntry entry;
    entry.config = &pc;
    entry.factory =
        std::make_unique<HarnessSandboxFactory>(client, std::move(setup), manager->logger_);
    entry.pool = std::make_unique<pool::WarmPool>(po, *entry.factory, manager->logger_);
    manager->pools_.emplace(pc.name, std::move(entry));
  }
  return manager;
}

SessionManager::~SessionManager() { Shutdown(); }

void SessionManager::Start() {
  for (auto& [name, entry] : pools_) entry.pool->Start();
  std::lock_guard lock(mu_);
  if (stopping_ || expiry_.joinable()) return;
  expiry_ = std::thread([this] { ExpiryLoop(); });
}

void SessionManager::Shutdown() {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, s] : sessions_) all.push_back(s);
    sessions_.clear();
  }
  stop_cv_.notify_all();
  if (expiry_.joinable() && expiry_.get_id() != std::this_thread::get_id()) expiry_.join();
  for (auto& s : all) {
    std::lock_guard state(s->state_mu);
    s->closed = true;
    if (s->close_token) s->close_token->Cancel();
    if (!s->busy) s->lease.Reset();
  }
  for (auto& [name, entry] : pools_) entry.pool->Shutdown();
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
  auto it = sessions_.find(id);
  // A foreign session looks exactly like a missing one: ids cannot be probed across tokens.
  if (it == sessions_.end() || it->second->principal != principal) {
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
  Status last = OkStatus();
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto lease = it->second.pool->Acquire(std::nullopt, session.principal);
    if (!lease.ok()) return lease.error().WithContext("start a container for the session");
    lease->Discard();  // never back to a pool, whatever happens
    auto* sandbox = static_cast<runner::HarnessSandbox*>(lease->get());
    last = sandbox->BeginSession(session.limits);
    if (last.ok()) {
      std::lock_guard state(session.state_mu);
      session.lease = std::move(*lease);
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
    session.lease.Reset();
    if (lost_silently) {
      ++session.restarts;
      session.pending_notice = kRestartedEmpty;
    }
  }
  return Attach(session);
}

Result<nlohmann::json> SessionManager::Op(const std::shared_ptr<Session>& s, nlohmann::json op) {
  auto call = Call::Begin(s, config_.sessions.busy_wait);
  if (!call.ok()) return call.error();
  SANDBOX_RETURN_IF_ERROR(EnsureSandbox(*s));
  auto* sandbox = s->sandbox();
  auto reply = sandbox->SessionOp(std::move(op));
  if (reply.ok()) {
    // An interpreter restart while idle shows up here too; keep it for the next run.
    if (auto notice = sandbox->TakeSessionNotice(); !notice.empty()) {
      std::lock_guard state(s->state_mu);
      s->pending_notice = notice;
    }
    return reply;
  }
  if (sandbox->Reusable()) return reply.error();
  {
    std::lock_guard state(s->state_mu);
    s->lease.Reset();
    ++s->restarts;
  }
  return Error(ErrorCode::kUnavailable, reply.error().message() + "; " + kRestartedEmpty);
}

Result<exec::SessionInfo> SessionManager::Create(const std::string& principal,
                                                 const exec::SessionCreateRequest& request) {
  exec::RunRequest probe;
  probe.pool = request.pool;
  probe.limits = request.limits;
  auto limits = service_.ResolveRequest(probe);
  if (!limits.ok()) return limits.error();
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
  session->id = NewSessionId();
  session->principal = principal;
  session->pool = pool_name;
  session->limits = *limits;
  session->created = session->last_used = Clock::now();
  session->created_unix_ms = UnixMsNow();
  auto attached = Attach(*session);
  std::lock_guard lock(mu_);
  --creating_;
  if (--creating_by_principal_[principal] == 0) creating_by_principal_.erase(principal);
  if (!attached.ok()) return attached.error();
  if (stopping_) {
    std::lock_guard state(session->state_mu);
    session->lease.Reset();
    return Error(ErrorCode::kUnavailable, "the server is shutting down");
  }
  sessions_.emplace(session->id, session);
  ++stats_.created_total;
  if (logger_) {
    logger_->info("session {} created for \"{}\" in pool {}", session->id.substr(0, 8), principal,
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
    for (const auto& [id, s] : sessions_) {
      if (s->principal == principal) mine.push_back(s);
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

void SessionManager::Remove(const std::string& id, const char* why) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    s = it->second;
    sessions_.erase(it);
  }
  std::lock_guard state(s->state_mu);
  s->closed = true;
  // A call in progress is cancelled and destroys the container when it ends.
  if (s->close_token) s->close_token->Cancel();
  if (!s->busy) s->lease.Reset();
  if (logger_) logger_->info("session {} ended: {}", id.substr(0, 8), why);
}

Status SessionManager::Close(const std::string& principal, const std::string& session_id) {
  auto s = Find(principal, session_id);
  if (!s.ok()) return s.error();
  Remove(session_id, "closed by its owner");
  return OkStatus();
}

void SessionManager::ExpiryLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, std::chrono::seconds(1));
    if (stopping_) break;
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
  exec::RunRequest probe = request;
  probe.pool = s->pool;
  auto resolved = service_.ResolveRequest(probe);
  if (!resolved.ok()) return resolved.error();
  runner::RunLimits limits = s->limits;
  if (request.limits.timeout_s) limits.timeout_s = resolved->timeout_s;
  if (request.limits.output_bytes) limits.output_bytes = resolved->output_bytes;

  auto call = Call::Begin(s, config_.sessions.busy_wait);
  if (!call.ok()) return call.error();
  SANDBOX_RETURN_IF_ERROR(EnsureSandbox(*s));
  std::string notice;
  {
    std::lock_guard state(s->state_mu);
    notice = std::exchange(s->pending_notice, {});
  }
  auto* sandbox = s->sandbox();
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
    result.detail += result.detail.empty() ? kRestartedEmpty : std::string("; ") + kRestartedEmpty;
    std::lock_guard state(s->state_mu);
    s->lease.Reset();
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
  exec::RunRequest probe;
  probe.pool = s->pool;
  probe.files = files;
  if (auto checked = service_.ResolveRequest(probe); !checked.ok()) return checked.error();

  json list = json::array();
  for (const auto& f : files) {
    list.push_back({{"path", f.path}, {"content_b64", Base64Encode(f.content)}});
  }
  auto reply = Op(s, json{{"op", "put_files"}, {"files", list}});
  if (!reply.ok()) return reply.error();
  std::vector<exec::SessionFile> out;
  if (auto it = reply->find("files"); it != reply->end() && it->is_array()) {
    for (const auto& f : *it) {
      if (f.is_object()) out.push_back(ParseFileEntry(f));
    }
  }
  return out;
}

Result<exec::SessionFileList> SessionManager::ListFiles(const std::string& principal,
                                                        const std::string& session_id) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  auto reply = Op(s, json{{"op", "list_files"}});
  if (!reply.ok()) return reply.error();
  exec::SessionFileList out;
  out.truncated = reply->value("truncated", false);
  if (auto it = reply->find("files"); it != reply->end() && it->is_array()) {
    for (const auto& f : *it) {
      if (!f.is_object()) continue;
      auto entry = ParseFileEntry(f);
      // Checked again here (the zygote checked the session's answer): an entry whose path
      // is not a valid result path is dropped and marked, never passed on.
      if (!runner::ResultPathError(entry.path).empty()) {
        out.truncated = true;
        continue;
      }
      out.files.push_back(std::move(entry));
    }
  }
  return out;
}

Result<exec::OutputFile> SessionManager::GetFile(const std::string& principal,
                                                 const std::string& session_id,
                                                 const std::string& path) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  if (auto why = runner::InputPathError(path); !why.empty()) return Invalid("path: " + why);
  auto reply = Op(
      s, json{{"op", "get_file"}, {"path", path}, {"max_bytes", config_.sessions.max_file_bytes}});
  if (!reply.ok()) return reply.error();
  auto data = Base64Decode(JsonStr(*reply, "data_b64"));
  if (!data.ok()) return Error(ErrorCode::kProtocol, "the sandbox sent a file that is not base64");
  exec::OutputFile file;
  file.path = JsonStr(*reply, "path");
  if (file.path.empty()) file.path = path;
  file.mime_type = JsonStr(*reply, "mime_type");
  if (file.mime_type.empty()) file.mime_type = "application/octet-stream";
  file.data = std::move(*data);
  file.size = static_cast<std::int64_t>(file.data.size());
  return file;
}

Status SessionManager::DeleteFile(const std::string& principal, const std::string& session_id,
                                  const std::string& path) {
  auto found = Find(principal, session_id);
  if (!found.ok()) return found.error();
  std::shared_ptr<Session> s = *found;
  if (auto why = runner::InputPathError(path); !why.empty()) return Invalid("path: " + why);
  auto reply = Op(s, json{{"op", "delete_file"}, {"path", path}});
  if (!reply.ok()) return reply.error();
  return OkStatus();
}

std::vector<std::pair<std::string, pool::PoolStats>> SessionManager::PoolStats() const {
  std::vector<std::pair<std::string, pool::PoolStats>> out;
  for (const auto& [name, entry] : pools_)
    out.emplace_back(entry.pool->options().name, entry.pool->stats());
  return out;
}

}  // namespace sandbox::service
