// SessionManager: the engine's SessionService. Every session holds one container of its own,
// leased from a per-pool warm pool of session sandboxes (harness mode "session": one
// interpreter lives across runs) and never returned: the container is destroyed when the
// session ends (closed, idle timeout, lifetime), and on every path a Lease guarantees it.
//
// Restarts: the harness restarts a session's interpreter empty after a limit kill and says so
// in the run's result. When the whole container fails (it died, the protocol broke) the
// manager replaces it with a fresh one from the pool under the same session id, also
// "restarted empty". A session is never left half-alive.
//
// Restarts of the server (sessions.restart_grace_s > 0): sessions are found by the SHA-256 of
// their id (session_record.h). Shutdown(leave_sessions) leaves idle sessions' containers
// running; the next server of the same instance adopts them (Adopt) and serves them again once
// their owner presents the id. The expiry thread pings idle sessions often enough that their
// harness's watchdog (the grace) never fires while this server runs.
//
// Threads: one expiry thread (closes sessions past their idle timeout or lifetime, once a
// second, and pings idle sessions), plus the session pools' own threads. Shutdown() joins them
// and destroys every session's container (or leaves it running, see above).
//
// Thread-safety: every method may be called from any thread at any time.
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/config/config.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/exec/session_service.h"
#include "sandbox/pool/warm_pool.h"
#include "sandbox/runner/sandbox.h"
#include "sandbox/service/request_resolver.h"
#include "sandbox/service/sandbox_pools.h"
#include "sandbox/service/sandbox_service.h"

namespace sandbox::service {

class SessionManager final : public exec::SessionService {
 public:
  // `resolver` checks requests against the pools' limits; it and `config` must outlive the
  // manager. The session pools are built by BuildPools over the makers `make` returns.
  // Starts nothing; call Start().
  static std::unique_ptr<SessionManager> Create(const config::Config& config,
                                                const RequestResolver& resolver,
                                                const MakerFactory& make,
                                                const ServiceOptions& options,
                                                std::shared_ptr<spdlog::logger> logger);
  // The same over HarnessSandboxes on `engine` (it must outlive the manager), checked by
  // `service`'s rules (it too).
  static Result<std::unique_ptr<SessionManager>> Create(const config::Config& config,
                                                        const engine::ContainerEngine& engine,
                                                        const SandboxService& service,
                                                        const ServiceOptions& options,
                                                        std::shared_ptr<spdlog::logger> logger);
  ~SessionManager() override;

  // Starts the session pools (the default pool keeps sessions.warm containers ready) and the
  // expiry thread.
  void Start();
  // Ends every session (destroying its container) and stops the pools. Idempotent. With
  // `leave_sessions` and sessions.restart_grace_s > 0, a session's container is left running
  // instead (a call in progress is cancelled first), for the next server to adopt.
  void Shutdown(bool leave_sessions = false);
  // Adopts session containers an earlier server of this instance left (SweepCounts::
  // left_sessions): re-attaches to each, asks its harness for the session's record and
  // decides (DecideAdoption); removes the ones not adopted. A restored session is served again
  // once its owner presents its id (the record's MAC is checked then). Call before Start().
  // Returns how many were adopted.
  int Adopt(const std::vector<engine::Listed>& left);

  Result<exec::SessionInfo> Create(const std::string& principal,
                                   const exec::SessionCreateRequest& request) override;
  Result<std::vector<exec::SessionInfo>> List(const std::string& principal) override;
  Result<exec::SessionInfo> Get(const std::string& principal,
                                const std::string& session_id) override;
  Status Close(const std::string& principal, const std::string& session_id) override;
  Result<exec::RunResult> Run(const std::string& principal, const std::string& session_id,
                              const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override;
  Result<std::vector<exec::SessionFile>> PutFiles(
      const std::string& principal, const std::string& session_id,
      const std::vector<exec::InputFile>& files) override;
  Result<exec::SessionFileList> ListFiles(const std::string& principal,
                                          const std::string& session_id) override;
  Result<exec::OutputFile> GetFile(const std::string& principal, const std::string& session_id,
                                   const std::string& path) override;
  Status DeleteFile(const std::string& principal, const std::string& session_id,
                    const std::string& path) override;

  // An engine went down: the warm session sandboxes on it are dropped without a call to it
  // (their containers are left to the engine's sweep when it is back). Sessions on it keep their
  // sandbox until their next call finds it gone: they restart empty on another engine, told
  // which engine was lost. Returns how many were dropped.
  int DropWarmOn(const std::string& engine);

  // Sessions alive now, and counters, for sandbox_info and metrics.
  struct Stats {
    int active = 0;
    std::uint64_t created_total = 0;
    std::uint64_t expired_total = 0;  // closed by the idle timeout or the lifetime
    std::uint64_t restarts_total = 0;
    std::uint64_t restored_total = 0;  // adopted after a server restart
  };
  Stats stats() const;
  // Each session pool's figures, by the pool's name ("<pool>/sessions").
  std::vector<std::pair<std::string, pool::PoolStats>> PoolStats() const;

 private:
  struct Session;
  class Call;  // a call holding a session exclusively (session_manager.cc)

  SessionManager(const config::Config& config, const RequestResolver& resolver,
                 std::shared_ptr<spdlog::logger> logger);

  Result<std::shared_ptr<Session>> Find(const std::string& principal, const std::string& id);
  // Gives the session a working sandbox: a fresh lease from its pool (or, for a session whose
  // container must carry its key, a container started for it), with the session begun.
  Status Attach(Session& session);
  // What a session begins with: its record and watchdog (with a restart grace), else nothing.
  runner::SessionTerms TermsOf(const Session& session) const;
  // Pings idle sessions not heard from for kKeepAlive, so their watchdog never fires.
  void KeepAlive();
  std::chrono::milliseconds KeepAliveInterval() const;
  // Attach() when the session has no working sandbox (noting a restart not yet reported).
  Status EnsureSandbox(Session& session);
  // `op` on the session's sandbox, holding the session exclusively (a file operation). A
  // sandbox lost on the way is replaced by the next call: the session restarts empty, and the
  // error says so.
  template <typename Op>
  auto WithSandbox(const std::shared_ptr<Session>& session, Op op)
      -> decltype(op(std::declval<runner::Sandbox&>()));
  exec::SessionInfo Snapshot(Session& session);
  void ExpiryLoop();
  void Remove(const std::string& key, const char* why);

  const config::Config& config_;
  const RequestResolver& resolver_;
  std::shared_ptr<spdlog::logger> logger_;
  PoolSet pools_;

  mutable std::mutex mu_;
  // By SessionKey(id): a restored session's id is not known until its owner presents it.
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  int creating_ = 0;  // Create() calls past the quota check, not yet in sessions_
  std::map<std::string, int> creating_by_principal_;
  Stats stats_;
  bool stopping_ = false;
  std::condition_variable stop_cv_;
  std::thread expiry_;
};

}  // namespace sandbox::service
