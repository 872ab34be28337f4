// HarnessSandbox: one sandbox container with the project's harness running in it — the
// concrete Sandbox (sandbox.h), and the only place that speaks the harness's messages. Start()
// launches the sandbox on its engine (sandbox_spec.h; the engine creates the container, attaches
// to its stdio and starts it), sends the harness and its configuration, and waits for `ready`.
// Run() sends one run and relays its events until `done` (docs/harness-protocol.md). The
// messages are encoded and decoded in harness_protocol.h (their names from the protocol's
// schema); a run is watched by a RunMonitor (cancel, deadline) and its result built by a
// ResultCollector (the server's checks of what the run reports).
//
// Thread-safety: one holder at a time calls Run()/Healthy() (the pool guarantees it). A run's
// CancelToken may fire from any thread; the cancel is written to the harness under a mutex.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/config/config.h"
#include "sandbox/engine/container_engine.h"
#include "sandbox/exec/execution_service.h"
#include "sandbox/runner/container_handle.h"
#include "sandbox/runner/egress_link.h"
#include "sandbox/runner/harness_frames.h"
#include "sandbox/runner/harness_wire.h"
#include "sandbox/runner/sandbox.h"

namespace sandbox::runner {

// The harness protocol version this server speaks (ready.protocol; the schema's version, see
// harness_wire.h); an adopted session container's harness, sent by an earlier server, must
// speak it too.
inline constexpr int kHarnessProtocol = wire::kProtocolVersion;

class ResultCollector;
class RunMonitor;
struct DoneEvent;
struct HarnessEvent;

// Everything needed to start sandboxes of one pool. Owned by the factory; outlives sandboxes.
struct SandboxSetup {
  config::PoolConfig pool;
  config::OutputOptions output;
  std::string container_seccomp_json;  // validated profile text (policy::ContainerProfile)
  std::string run_filter_bpf;          // compiled per-run filter (policy::RunFilter), raw bytes
  std::string instance_id;
  std::string replica;  // server.replica: the prefix of the session ids minted for its containers
  std::map<std::string, std::string> extra_labels;
  InputLimits input;
  // The run's work dir inside the sandbox (a private tmpfs per run); relative file paths of
  // requests and results are relative to it.
  std::string workdir = "/tmp/work";
  // Session sandboxes: the harness keeps one interpreter alive across runs (config mode
  // "session"); the container is labelled mode=session and never returns to a pool.
  bool session = false;
  // The largest file a session's get_file answers with (sessions.max_file_bytes): with the
  // figure and file piece bounds it sets the largest frame the server accepts from the harness.
  std::int64_t session_file_bytes = 16LL << 20;
  // Started without the pool's preload and warm plot (skip_preload_when_queued): the pool
  // retires such sandboxes first when it shrinks.
  bool lean = false;
  // A session's file operation not answered in this long resets the session (harness-side).
  std::chrono::milliseconds op_timeout{10000};
  // Session sandboxes that may outlive their server (sessions.restart_grace_s > 0): the
  // container keeps its stdin open when the server's stream closes (so a later server can
  // attach again), and the harness exits once no server has spoken to it for this long while
  // idle (config watchdog_s), which is then what bounds the container. 0: neither; the harness
  // exits when the server's stream closes.
  std::chrono::milliseconds watchdog{0};
  // Container created → harness `ready` (imports and a warm-up plot take seconds).
  std::chrono::milliseconds start_timeout{90000};
  // Added to a run's timeout before the server stops waiting for the harness and kills the
  // container itself (the harness enforces the timeout; this is the backstop).
  std::chrono::milliseconds run_grace{10000};
};

// What one start adds to its pool's setup.
struct StartExtras {
  std::map<std::string, std::string> labels;  // besides the setup's
  // The id of the session this container is made for, kept with the sandbox (session_id());
  // never sent to the container nor put in a label.
  std::string session_id;
  // The egress gateway of the engine for a pool with a network policy (null: none; such a
  // pool's start then fails). Outlives the sandbox.
  EgressLink* egress = nullptr;
};

class HarnessSandbox final : public Sandbox {
 public:
  // The name of the engine it runs on (first in the class: the members below name the
  // namespace engine::).
  const std::string& engine() const override { return engine_.name(); }

  // Blocks until the harness is ready or fails; the container is removed on failure. When
  // `cancel` (optional, any thread) becomes true, the start gives up (kCancelled) after the
  // engine call in progress, or within kStartCancelPoll while it waits for the harness.
  // `engine` must outlive the sandbox.
  static Result<std::unique_ptr<HarnessSandbox>> Start(const engine::ContainerEngine& engine,
                                                       const SandboxSetup& setup,
                                                       std::shared_ptr<spdlog::logger> logger,
                                                       const std::atomic<bool>* cancel = nullptr,
                                                       StartExtras extras = {});
  // A running session container of an earlier server (its stdin kept open, see
  // SandboxSetup::watchdog): attaches to its stdio again. The harness is not sent again;
  // the caller asks it what it holds (Resume). The container is owned from here on: it is
  // removed when the sandbox is destroyed, also when this fails.
  static Result<std::unique_ptr<HarnessSandbox>> Adopt(const engine::ContainerEngine& engine,
                                                       const SandboxSetup& setup,
                                                       const std::string& container_id,
                                                       std::shared_ptr<spdlog::logger> logger);
  static constexpr std::chrono::milliseconds kStartCancelPoll{100};
  // How long the egress proxy may take to apply a sandbox's new policy.
  static constexpr std::chrono::milliseconds kNetworkChangeTimeout{5000};
  ~HarnessSandbox() override;

  exec::RunResult Run(const std::string& code, const std::vector<exec::InputFile>& files,
                      const RunLimits& limits, exec::RunObserver& observer,
                      const exec::CancelToken& cancel) override;
  // The harness's pong carries the container's memory use (cgroup), when readable.
  Result<PingInfo> Ping() override;
  // Told to the pool's egress proxy (EgressLink::Admit) before it returns.
  Status SetNetwork(const config::NetworkPolicy* policy) override;

  // Session sandboxes only (SandboxSetup::session); see Sandbox. The rules and per-run filter
  // apply once, before the first cell; the terms go into the harness's session op (record,
  // watchdog_s: docs/harness-protocol.md).
  Status BeginSession(const RunLimits& limits, const SessionTerms& terms) override;
  Result<ResumeInfo> Resume() override;
  Result<std::vector<exec::SessionFile>> PutFiles(
      const std::vector<exec::InputFile>& files) override;
  Result<exec::SessionFileList> ListFiles() override;
  Result<exec::OutputFile> GetFile(const std::string& path, std::int64_t max_bytes) override;
  Status DeleteFile(const std::string& path) override;
  std::string TakeSessionNotice() override;
  // Closes the stream (its stdin stays open, see SandboxSetup::watchdog) and gives up
  // ownership. Only for sandboxes with a watchdog.
  void Leave() override;

  bool Healthy() override;
  // False from a recycle run's `done` until the harness's next `ready` (its next run's
  // processes are forked); looks at the stream without waiting.
  bool Prepared() override;
  bool Reusable() const override { return !broken_ && !used_up_; }
  int RunCount() const override { return run_count_; }
  pool::Clock::time_point CreatedAt() const override { return created_at_; }
  std::string Name() const override { return container_.short_id(); }
  bool Lean() const override { return setup_.lean; }

  // The harness's `ready` message: python version, preloaded modules, isolation, errors.
  const nlohmann::json& ready_info() const { return ready_info_; }
  const std::string& container_id() const override { return container_.id(); }
  // StartExtras::session_id; empty for sandboxes started without one (and adopted ones).
  const std::string& session_id() const override { return session_id_; }

 private:
  HarnessSandbox(const engine::ContainerEngine& engine, const SandboxSetup& setup,
                 ContainerHandle container, std::unique_ptr<engine::AttachedStream> stream,
                 std::shared_ptr<spdlog::logger> logger);

  Status Boot(engine::Deadline deadline, const std::atomic<bool>* cancel);
  // One file operation of the harness (put_files, list_files, get_file, delete_file, resume,
  // session): sends `request(id)` with a fresh id and returns the reply's `result`. The
  // harness's refusal becomes kNotFound ("no such file"), kLimit (a size bound) or
  // kInvalidArgument; a lost sandbox becomes kUnavailable and marks it broken.
  Result<nlohmann::json> SessionOp(
      const std::function<nlohmann::json(std::string_view id)>& request);
  // The container is created with room for the harness to start (zygote_memory_bytes and 8
  // tasks beyond the run's limits). Once ready, the harness reports what it holds itself
  // (`ready.cgroup`), and the container is narrowed to that plus the run's memory budget (and
  // kRelayHeadroomBytes for relaying) and the run's pids: the limits are then the run's own.
  // A failed update keeps the ceiling (logged). Not for gVisor pools.
  void NarrowToRunLimits(engine::Deadline deadline);
  Status SendJson(const nlohmann::json& message, engine::Deadline deadline);
  // The next harness frame; nullopt at end of stream. kTimeout leaves the stream usable.
  Result<std::optional<Frame>> NextFrame(engine::Deadline deadline);
  void NoteHarnessStderr(std::string_view bytes);
  // Logs, once, what the log budget of the run (or the idle time) `what` held back: harness
  // lines past kHarnessLogLines and the events the server dropped; then opens a fresh budget.
  void CloseLogBudget(const std::string& what);
  std::string StderrTail() const;
  void MarkBroken(const std::string& why);
  // A run's events, relayed until its `done`; or until the monitor gives up on the run or the
  // stream fails, which retires the sandbox.
  exec::RunResult RelayUntilDone(const std::string& run_id, bool interactive,
                                 engine::Clock::time_point start, RunMonitor& monitor,
                                 ResultCollector& collector, exec::RunObserver& observer);
  // The run's `done`: the sandbox counts the run (a fresh pool's is used up), and an internal
  // verdict retires it.
  exec::RunResult FinishRun(const DoneEvent& done, engine::Clock::time_point start,
                            ResultCollector& collector);
  // Handles an event that may arrive while no run is waiting for it (ready: its info kept;
  // session_reset: its notice kept). True when it was one of those.
  bool NoteIdleEvent(HarnessEvent& event);

  const engine::ContainerEngine& engine_;
  const SandboxSetup& setup_;
  ContainerHandle container_;
  std::unique_ptr<engine::AttachedStream> stream_;
  std::shared_ptr<spdlog::logger> logger_;
  FrameDecoder decoder_;
  std::mutex write_mu_;  // the run thread, a cancelling and an answering thread all write
  std::string stderr_tail_;
  std::string stderr_line_;
  // What one run may make the server log (docs/memory-budget.md, "Logs"): its harness lines up
  // to a count, each cut; the rest, and every event that failed the server's checks, counted
  // and logged in one line when the run ends (CloseLogBudget).
  struct LogBudget {
    int lines_logged = 0;
    std::int64_t lines_held = 0;
    std::int64_t bytes_held = 0;
    std::int64_t events_dropped = 0;
    std::string first_drop;  // why the first dropped event was dropped
  };
  LogBudget log_budget_;
  nlohmann::json ready_info_;
  pool::Clock::time_point created_at_;
  int run_count_ = 0;
  std::uint64_t run_seq_ = 0;
  bool broken_ = false;
  bool used_up_ = false;
  std::string session_notice_;
  bool prepared_ = false;            // a `ready` arrived after the last `done`
  engine::ResourceUpdate narrowed_;  // the limits NarrowToRunLimits set (0: the ceiling)
  std::string session_id_;
  // A pool with a network policy: the gateway that admitted this sandbox's address.
  EgressLink* egress_ = nullptr;
  std::string address_;
};

}  // namespace sandbox::runner
