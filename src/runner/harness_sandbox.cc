#include "sandbox/runner/harness_sandbox.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <variant>

#include "harness_protocol.h"
#include "result_collector.h"
#include "run_monitor.h"
#include "sandbox/core/json.h"
#include "sandbox/core/log_safe.h"
#include "sandbox/runner/harness_source.h"
#include "sandbox/runner/harness_wire.h"
#include "sandbox/runner/result_checks.h"
#include "sandbox/runner/sandbox_spec.h"

namespace sandbox::runner {
namespace {

using engine::Clock;
using engine::Deadline;
using engine::DeadlineAfter;
using nlohmann::json;

constexpr std::size_t kStderrTailBytes = 4096;
// The harness's stderr lines one run (or the time between two runs) may put in the server's log,
// and the bytes of each: the harness logs the claims it refuses, and the run's code can make
// it refuse thousands. The rest is counted into one line (CloseLogBudget).
constexpr int kHarnessLogLines = 16;
constexpr std::size_t kHarnessLogLineBytes = 512;
// The prompt of an input() ask: the harness cuts it at input_max_prompt_chars characters.
constexpr std::size_t kMaxPromptBytes =
    static_cast<std::size_t>(kResultLimits.input_max_prompt_chars) * 4;
// Room beyond the run's memory budget for the zygote relaying the run's output and records
// (one file piece, one figure and output chunks at a time): the relay never counts against
// the budget.
constexpr std::int64_t kRelayHeadroomBytes = 12LL << 20;

// A string member of the harness's `ready`, "" when it has none.
std::string ReadyText(const json& ready, std::string_view key) {
  auto it = ready.find(key);
  return it != ready.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::chrono::milliseconds RunTimeout(const RunLimits& limits) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(limits.timeout_s * 1000)));
}

// An `input_request` of a run: asks the observer when the run is interactive (the harness only
// asks then: it has no channel to wait on otherwise); the reply goes through the monitor, so
// one after the run goes nowhere.
void AskObserver(const InputRequestEvent& ask, bool interactive, const RunMonitor& monitor,
                 exec::RunObserver& observer) {
  if (!ask.seq || !interactive) return;
  exec::InputRequest request;
  request.seq = static_cast<int>(*ask.seq);
  request.prompt = CutText(ask.prompt, kMaxPromptBytes);
  observer.OnInputRequest(request, monitor.ReplyTo(*ask.seq));
}

}  // namespace

HarnessSandbox::HarnessSandbox(const engine::ContainerEngine& engine, const SandboxSetup& setup,
                               ContainerHandle container,
                               std::unique_ptr<engine::AttachedStream> stream,
                               std::shared_ptr<spdlog::logger> logger)
    : engine_(engine),
      setup_(setup),
      container_(std::move(container)),
      stream_(std::move(stream)),
      logger_(std::move(logger)),
      decoder_(MaxFrameBytes(setup)),
      created_at_(pool::Clock::now()) {}

HarnessSandbox::~HarnessSandbox() {
  if (stream_) stream_->Close();
  stream_.reset();
  // Before the container goes: its address may be given to the next sandbox at once, and a
  // later Forget would take that one's admission away.
  if (egress_ != nullptr && !address_.empty()) egress_->Forget(address_);
  container_.Remove();
}

Result<std::unique_ptr<HarnessSandbox>> HarnessSandbox::Start(
    const engine::ContainerEngine& engine, const SandboxSetup& setup,
    std::shared_ptr<spdlog::logger> logger, const std::atomic<bool>* cancel, StartExtras extras) {
  const Deadline deadline = DeadlineAfter(setup.start_timeout);
  if (cancel != nullptr && cancel->load()) {
    return Error(ErrorCode::kCancelled, std::string(engine::kLaunchCancelled));
  }
  SandboxSpecInput input;
  input.pool = &setup.pool;
  input.container_seccomp_json = setup.container_seccomp_json;
  input.instance_id = setup.instance_id;
  input.extra_labels = setup.extra_labels;
  input.extra_labels.merge(extras.labels);
  input.session = setup.session;
  input.keep_stdin_open = setup.session && setup.watchdog.count() > 0;
  const bool networked = setup.pool.network.mode == config::NetworkPolicy::Mode::kAllowlist;
  if (networked) {
    if (extras.egress == nullptr) {
      return Error(ErrorCode::kUnsupported, "pool '" + setup.pool.name +
                                                "' has a network policy but engine " +
                                                engine.name() + " has no egress gateway");
    }
    auto joined = extras.egress->Join(deadline);
    if (!joined.ok())
      return joined.error().WithContext("the egress network of pool '" + setup.pool.name + "'");
    input.network = std::move(*joined);
  }
  // The engine removes what it made when the launch fails or is cancelled.
  auto launched = engine.Launch(BuildSandboxSpec(input), deadline, cancel);
  if (!launched.ok()) return launched.error();
  ContainerHandle handle(&engine, launched->id, logger);

  std::unique_ptr<HarnessSandbox> sandbox(new HarnessSandbox(
      engine, setup, std::move(handle), std::move(launched->stream), std::move(logger)));
  sandbox->session_id_ = std::move(extras.session_id);
  if (networked) {
    // The code runs only once the proxy knows this address's policy.
    auto state = engine.Inspect(sandbox->container_.id(), deadline);
    if (!state.ok()) return state.error().WithContext("inspect the sandbox for its address");
    auto address = state->addresses.find(input.network.name);
    if (address == state->addresses.end()) {
      return Error(ErrorCode::kEngine,
                   "the sandbox has no address on network " + input.network.name);
    }
    auto admitted = extras.egress->Admit(address->second, nullptr, deadline);
    if (!admitted.ok()) return admitted.error().WithContext("tell the egress proxy");
    sandbox->egress_ = extras.egress;
    sandbox->address_ = address->second;
  }
  auto booted = sandbox->Boot(deadline, cancel);
  if (!booted.ok()) return booted.error();
  sandbox->NarrowToRunLimits(deadline);
  return sandbox;
}

Result<std::unique_ptr<HarnessSandbox>> HarnessSandbox::Adopt(
    const engine::ContainerEngine& engine, const SandboxSetup& setup,
    const std::string& container_id, std::shared_ptr<spdlog::logger> logger) {
  ContainerHandle handle(&engine, container_id, logger);
  if (setup.pool.network.mode != config::NetworkPolicy::Mode::kNone) {
    // Its proxy ended with the server that started it (docs/network.md, "Sessions").
    return Error(ErrorCode::kUnsupported,
                 "a session of a pool with a network policy does not outlive its server");
  }
  auto stream = engine.Reattach(handle.id(), DeadlineAfter(setup.start_timeout));
  if (!stream.ok()) return stream.error().WithContext("attach to session container");
  std::unique_ptr<HarnessSandbox> sandbox(
      new HarnessSandbox(engine, setup, std::move(handle), std::move(*stream), std::move(logger)));
  sandbox->prepared_ = true;  // a session harness between calls
  return sandbox;
}

Status HarnessSandbox::SetNetwork(const config::NetworkPolicy* policy) {
  if (egress_ == nullptr || address_.empty()) return Sandbox::SetNetwork(policy);
  auto admitted = egress_->Admit(address_, policy, engine::DeadlineAfter(kNetworkChangeTimeout));
  // Left narrowed, the next run would get less than its pool allows: not reusable.
  if (!admitted.ok() && policy == nullptr) broken_ = true;
  return admitted;
}

void HarnessSandbox::Leave() {
  if (stream_) stream_->Close();
  stream_.reset();
  if (egress_ != nullptr && !address_.empty()) egress_->Forget(address_);
  address_.clear();
  container_.Release();
  broken_ = true;
}

void HarnessSandbox::NarrowToRunLimits(Deadline deadline) {
  const auto& pool = setup_.pool;
  // gVisor's cgroup files describe its own sandbox, not the container's: keep the ceiling.
  if (pool.runtime == "runsc") return;
  namespace r = wire::ev::ready;
  auto cgroup = ready_info_.find(r::kCgroup);
  if (cgroup == ready_info_.end() || !cgroup->is_object()) return;
  auto number = [&](std::string_view key) {
    auto it = cgroup->find(key);
    return it == cgroup->end() ? std::optional<std::int64_t>() : JsonInteger(*it);
  };
  engine::ResourceUpdate update;
  if (auto held = number(r::cgroup::kMemoryBytes); held && *held > 0) {
    update.memory_bytes = std::min(ContainerMemoryBytes(pool),
                                   *held + pool.limits.memory_bytes + kRelayHeadroomBytes);
  }
  // The prepared run process is among the harness's tasks, and it is the code's first one.
  if (auto tasks = number(r::cgroup::kPids); tasks && *tasks > 0) {
    update.pids_limit = std::min(ContainerPidsLimit(pool), *tasks - 1 + pool.limits.pids);
  }
  if (update.memory_bytes == 0 && update.pids_limit == 0) return;
  auto status = engine_.Narrow(container_.id(), update, deadline);
  if (status.ok()) {
    narrowed_ = update;
    if (logger_) {
      logger_->debug("sandbox {}: narrowed to {} bytes and {} pids for the runs", Name(),
                     update.memory_bytes, update.pids_limit);
    }
  } else if (logger_ && status.error().code() == ErrorCode::kUnsupported) {
    // An engine that cannot (Podman 4, Kubernetes) says so for every sandbox: no warning each.
    logger_->debug("sandbox {}: the engine keeps the container's ceiling ({})", Name(),
                   status.error().message());
  } else if (logger_) {
    // The creation ceiling stays: still bounded, only less precisely.
    logger_->warn(
        "sandbox {}: could not narrow its limits to the run's ({}); the container's "
        "ceiling stays",
        Name(), status.error().message());
  }
}

Status HarnessSandbox::Boot(Deadline deadline, const std::atomic<bool>* cancel) {
  const std::string_view source = HarnessSource();
  std::string boot = std::to_string(source.size()) + "\n";
  boot.append(source);
  {
    std::lock_guard lock(write_mu_);
    auto sent = stream_->Write(boot, deadline);
    if (!sent.ok()) return sent.error().WithContext("send the harness");
  }
  SANDBOX_RETURN_IF_ERROR(SendJson(ConfigRequest(setup_), deadline));
  while (true) {
    // In slices, so a cancel is noticed while the harness preloads (seconds).
    auto frame = NextFrame(cancel != nullptr ? std::min(deadline, Clock::now() + kStartCancelPoll)
                                             : deadline);
    if (cancel != nullptr && cancel->load()) {
      return Error(ErrorCode::kCancelled, "the sandbox start was cancelled");
    }
    if (!frame.ok() && frame.error().code() == ErrorCode::kTimeout && Clock::now() < deadline) {
      continue;
    }
    if (!frame.ok()) {
      return frame.error().WithContext(
          "waiting for the harness to become ready" +
          (StderrTail().empty() ? "" : " (harness: " + StderrTail() + ")"));
    }
    if (!frame->has_value()) {
      return Error(ErrorCode::kInternal,
                   "the sandbox exited before it was ready; harness stderr: " + StderrTail());
    }
    if ((*frame)->kind != FrameKind::kJson) continue;
    HarnessEvent event = DecodeEvent((*frame)->payload);
    if (const auto* invalid = std::get_if<InvalidMessage>(&event); invalid && !invalid->parsed) {
      return Error(ErrorCode::kProtocol, "harness sent invalid JSON");
    }
    if (auto* ready = std::get_if<ReadyEvent>(&event)) {
      ready_info_ = std::move(ready->message);
      prepared_ = true;
      if (logger_) {
        namespace r = wire::ev::ready;
        logger_->debug("sandbox {} ready: python {}, isolation {}, run tree {}", Name(),
                       LogValue(ReadyText(ready_info_, r::kPython)),
                       LogValue(ReadyText(ready_info_, r::kIsolation)),
                       LogValue(ReadyText(ready_info_, r::kRunTree)));
      }
      return OkStatus();
    }
    if (const auto* fatal = std::get_if<FatalEvent>(&event)) {
      return Error(ErrorCode::kInternal,
                   "the harness failed to start: " + fatal->message + "; stderr: " + StderrTail());
    }
  }
}

Status HarnessSandbox::SendJson(const json& message, Deadline deadline) {
  auto frame = EncodeRequest(message);
  std::lock_guard lock(write_mu_);
  return stream_->Write(frame, deadline);
}

Result<std::optional<Frame>> HarnessSandbox::NextFrame(Deadline deadline) {
  while (true) {
    Frame frame;
    if (decoder_.Next(frame)) return std::optional<Frame>(std::move(frame));
    auto chunk = stream_->Read(deadline);
    if (!chunk.ok()) return chunk.error();
    if (!chunk->has_value()) return std::optional<Frame>();
    if ((*chunk)->stream == engine::StreamKind::kStderr) {
      NoteHarnessStderr((*chunk)->data);
      continue;
    }
    SANDBOX_RETURN_IF_ERROR(decoder_.Feed((*chunk)->data));
  }
}

void HarnessSandbox::NoteHarnessStderr(std::string_view bytes) {
  stderr_tail_.append(bytes);
  if (stderr_tail_.size() > kStderrTailBytes) {
    stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
  }
  // The harness's own diagnostics, line by line, for the operator, within the log budget.
  stderr_line_.append(bytes);
  std::size_t nl = 0;
  while ((nl = stderr_line_.find('\n')) != std::string::npos) {
    if (log_budget_.lines_logged < kHarnessLogLines) {
      ++log_budget_.lines_logged;
      if (logger_) {
        logger_->info(
            "sandbox {}: {}", Name(),
            LogQuoted(std::string_view{stderr_line_}.substr(0, nl), kHarnessLogLineBytes));
      }
    } else {
      ++log_budget_.lines_held;
      log_budget_.bytes_held += static_cast<std::int64_t>(nl + 1);
    }
    stderr_line_.erase(0, nl + 1);
  }
  if (stderr_line_.size() > kStderrTailBytes) stderr_line_.clear();
}

void HarnessSandbox::CloseLogBudget(const std::string& what) {
  const LogBudget spent = std::exchange(log_budget_, LogBudget{});
  if (!logger_ || (spent.lines_held == 0 && spent.events_dropped == 0)) return;
  logger_->warn(
      "sandbox {}: {}: {} harness line(s) ({} bytes) not logged past the {} a run may log; {} "
      "event(s) dropped by the server's checks{}",
      Name(), what, spent.lines_held, spent.bytes_held, kHarnessLogLines, spent.events_dropped,
      spent.first_drop.empty() ? std::string() : " (the first: " + spent.first_drop + ")");
}

std::string HarnessSandbox::StderrTail() const {
  auto tail = stderr_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

void HarnessSandbox::MarkBroken(const std::string& why) {
  if (!broken_ && logger_) logger_->warn("sandbox {} retired: {}", Name(), LogEscape(why));
  broken_ = true;
}

bool HarnessSandbox::NoteIdleEvent(HarnessEvent& event) {
  if (auto* ready = std::get_if<ReadyEvent>(&event)) {
    ready_info_ = std::move(ready->message);
    prepared_ = true;
    return true;
  }
  if (const auto* reset = std::get_if<SessionResetEvent>(&event)) {
    // The interpreter died between calls; the harness has already prepared a fresh one.
    session_notice_ = "the session was restarted empty since the last call (" + reset->reason +
                      "); variables and files are gone";
    if (logger_) {
      logger_->info("sandbox {}: session restarted: {}", Name(), LogQuoted(reset->reason));
    }
    return true;
  }
  return false;
}

Result<PingInfo> HarnessSandbox::Ping() {
  if (broken_) return Error(ErrorCode::kUnavailable, "the sandbox is broken");
  const Deadline deadline = DeadlineAfter(std::chrono::seconds(5));
  if (auto sent = SendJson(PingRequest(), deadline); !sent.ok()) {
    MarkBroken("ping could not be sent");
    return Error(ErrorCode::kUnavailable, "the sandbox does not answer: " + sent.error().message());
  }
  while (true) {
    auto frame = NextFrame(deadline);
    if (!frame.ok() || !frame->has_value()) {
      MarkBroken("no answer to ping");
      return Error(ErrorCode::kUnavailable, "the sandbox does not answer");
    }
    if ((*frame)->kind != FrameKind::kJson) continue;
    HarnessEvent event = DecodeEvent((*frame)->payload);
    if (std::holds_alternative<InvalidMessage>(event)) {
      MarkBroken("invalid JSON while idle");
      return Error(ErrorCode::kProtocol, "the sandbox sent an invalid message");
    }
    if (const auto* pong = std::get_if<PongEvent>(&event)) {
      PingInfo info;
      info.memory_bytes = pong->memory_bytes;
      return info;
    }
    if (NoteIdleEvent(event)) continue;
    MarkBroken("unexpected message while idle: " + std::string(EventName(event)));
    return Error(ErrorCode::kProtocol, "the sandbox sent an unexpected message");
  }
}

bool HarnessSandbox::Healthy() { return Ping().ok(); }

Status HarnessSandbox::BeginSession(const RunLimits& limits, const SessionTerms& terms) {
  auto reply = SessionOp([&](std::string_view id) { return SessionRequest(id, limits, terms); });
  if (!reply.ok()) return reply.error().WithContext("start the session");
  return OkStatus();
}

Result<ResumeInfo> HarnessSandbox::Resume() {
  auto reply = SessionOp([](std::string_view id) { return ResumeRequest(id); });
  if (!reply.ok()) return reply.error();
  return DecodeResume(*reply);
}

Result<std::vector<exec::SessionFile>> HarnessSandbox::PutFiles(
    const std::vector<exec::InputFile>& files) {
  auto reply = SessionOp([&](std::string_view id) { return PutFilesRequest(id, files); });
  if (!reply.ok()) return reply.error();
  return DecodePutFiles(*reply);
}

Result<exec::SessionFileList> HarnessSandbox::ListFiles() {
  auto reply = SessionOp([](std::string_view id) { return ListFilesRequest(id); });
  if (!reply.ok()) return reply.error();
  return DecodeListFiles(*reply);
}

Result<exec::OutputFile> HarnessSandbox::GetFile(const std::string& path, std::int64_t max_bytes) {
  auto reply = SessionOp([&](std::string_view id) { return GetFileRequest(id, path, max_bytes); });
  if (!reply.ok()) return reply.error();
  return DecodeGetFile(*reply, path);
}

Status HarnessSandbox::DeleteFile(const std::string& path) {
  auto reply = SessionOp([&](std::string_view id) { return DeleteFileRequest(id, path); });
  if (!reply.ok()) return reply.error();
  return OkStatus();
}

std::string HarnessSandbox::TakeSessionNotice() { return std::exchange(session_notice_, {}); }

Result<json> HarnessSandbox::SessionOp(const std::function<json(std::string_view id)>& request) {
  if (!Reusable()) return Error(ErrorCode::kUnavailable, "the session's sandbox is not usable");
  const std::string id = "op-" + std::to_string(++run_seq_);
  const json op = request(id);
  // The harness answers within its op timeout or resets the session; a margin on top covers
  // large payloads crossing the stream.
  const Deadline deadline = DeadlineAfter(setup_.op_timeout + std::chrono::seconds(20));
  if (auto sent = SendJson(op, deadline); !sent.ok()) {
    MarkBroken("op could not be sent: " + sent.error().ToString());
    return Error(ErrorCode::kUnavailable, "the session's sandbox did not accept the request");
  }
  while (true) {
    auto frame = NextFrame(deadline);
    if (!frame.ok() || !frame->has_value()) {
      container_.Kill();
      MarkBroken("no answer to " + RequestName(op));
      return Error(ErrorCode::kUnavailable, "the session's sandbox stopped answering");
    }
    if ((*frame)->kind != FrameKind::kJson) continue;  // output of a background thread
    HarnessEvent event = DecodeEvent((*frame)->payload);
    if (std::holds_alternative<InvalidMessage>(event)) {
      MarkBroken("invalid JSON from the harness");
      return Error(ErrorCode::kProtocol, "the sandbox sent an invalid message");
    }
    if (const auto* fatal = std::get_if<FatalEvent>(&event)) {
      MarkBroken("harness fatal: " + fatal->message);
      return Error(ErrorCode::kUnavailable, "the sandbox failed: " + fatal->message);
    }
    if (auto* reply = std::get_if<ReplyEvent>(&event); reply && reply->id == id) {
      if (reply->ok) return std::move(reply->result);
      return ReplyError(*reply);
    }
    if (std::holds_alternative<PongEvent>(event) || NoteIdleEvent(event)) continue;
    // Stale events of an interrupted earlier call carry other ids; skip them.
  }
}

bool HarnessSandbox::Prepared() {
  if (prepared_ || broken_) return prepared_ && !broken_;
  // Takes what the harness sent since the run without waiting: the deadline has passed.
  while (true) {
    auto frame = NextFrame(Clock::now());
    if (!frame.ok()) {
      if (frame.error().code() != ErrorCode::kTimeout) MarkBroken("stream failed while idle");
      return false;
    }
    if (!frame->has_value()) {
      MarkBroken("the sandbox exited while idle: " + StderrTail());
      return false;
    }
    if ((*frame)->kind != FrameKind::kJson) continue;
    HarnessEvent event = DecodeEvent((*frame)->payload);
    if (const auto* fatal = std::get_if<FatalEvent>(&event)) {
      MarkBroken("harness fatal while idle: " + fatal->message);
      return false;
    }
    if (NoteIdleEvent(event) && prepared_) return true;  // `ready` sets prepared_
  }
}

// A run, step by step: send it, let the monitor watch the caller's cancel and the deadline,
// relay its events through the collector until `done`, give up on the sandbox if it fails.
exec::RunResult HarnessSandbox::Run(const std::string& code,
                                    const std::vector<exec::InputFile>& files,
                                    const RunLimits& limits, exec::RunObserver& observer,
                                    const exec::CancelToken& cancel) {
  exec::RunResult where;  // what every result says of where it ran
  where.pool = setup_.pool.name;
  where.engine = engine_.name();
  where.sandbox_id = container_id().substr(0, 12);
  ResultCollector collector(setup_.output, limits, observer, std::move(where),
                            [this](const std::string& why) {
                              if (log_budget_.events_dropped++ == 0) log_budget_.first_drop = why;
                            });
  if (!Reusable()) return collector.Fail(exec::Verdict::kInternal, "the sandbox is not usable");
  if (cancel.IsCancelled()) {
    return collector.Fail(exec::Verdict::kCancelled, "cancelled before it started");
  }

  const std::string run_id = "run-" + std::to_string(++run_seq_);
  // The lines held back since the last run are reported before this run's budget opens; this
  // run's when it ends, however it ends.
  CloseLogBudget("before " + run_id);
  struct CloseBudget {
    HarnessSandbox* sandbox;
    std::string run_id;
    ~CloseBudget() { sandbox->CloseLogBudget(run_id); }
  } close_budget{this, run_id};

  const bool interactive = setup_.pool.interactive_input && observer.AnswersInput();
  const auto start = Clock::now();
  if (auto sent = SendJson(RunRequest(run_id, code, files, limits, interactive),
                           DeadlineAfter(std::chrono::seconds(30)));
      !sent.ok()) {
    MarkBroken("run could not be sent: " + sent.error().ToString());
    return collector.Fail(exec::Verdict::kInternal,
                          "the sandbox did not accept the run: " + sent.error().message());
  }
  RunMonitor monitor(
      run_id, start + RunTimeout(limits) + setup_.run_grace,
      [this](const json& request, Deadline deadline) { return SendJson(request, deadline); });
  monitor.Watch(cancel);
  return RelayUntilDone(run_id, interactive, start, monitor, collector, observer);
}

exec::RunResult HarnessSandbox::RelayUntilDone(const std::string& run_id, bool interactive,
                                               Clock::time_point start, RunMonitor& monitor,
                                               ResultCollector& collector,
                                               exec::RunObserver& observer) {
  while (true) {
    const auto now = Clock::now();
    switch (monitor.Poll(now)) {
      case RunMonitor::State::kRunning:
        break;
      case RunMonitor::State::kCancelUnanswered:
        container_.Kill();
        MarkBroken("the harness did not answer a cancel");
        return collector.Fail(exec::Verdict::kCancelled, "cancelled; the sandbox was killed");
      case RunMonitor::State::kDeadlinePassed:
        container_.Kill();
        MarkBroken("the harness did not end a run at its deadline");
        return collector.Fail(exec::Verdict::kTimeout,
                              "the run exceeded its time limit and the sandbox was killed");
    }
    auto frame = NextFrame(monitor.NextWake(now));
    if (!frame.ok()) {
      if (frame.error().code() == ErrorCode::kTimeout) continue;
      MarkBroken("stream failed: " + frame.error().ToString());
      return collector.Fail(exec::Verdict::kInternal,
                            "lost the sandbox during the run: " + frame.error().message());
    }
    if (!frame->has_value()) {
      MarkBroken("the sandbox exited during a run");
      return collector.Fail(exec::Verdict::kInternal,
                            "the sandbox exited during the run" +
                                (StderrTail().empty() ? std::string() : ": " + StderrTail()));
    }
    Frame& f = **frame;
    if (f.kind != FrameKind::kJson) {
      collector.OnOutput(
          f.kind == FrameKind::kStdout ? exec::Stream::kStdout : exec::Stream::kStderr, f.payload);
      continue;
    }
    HarnessEvent event = DecodeEvent(f.payload);
    if (std::holds_alternative<InvalidMessage>(event)) {
      MarkBroken("invalid JSON from the harness");
      return collector.Fail(exec::Verdict::kInternal, "the sandbox sent an invalid message");
    }
    if (const auto* fatal = std::get_if<FatalEvent>(&event)) {
      MarkBroken("harness fatal: " + fatal->message);
      return collector.Fail(exec::Verdict::kInternal, "the sandbox failed: " + fatal->message);
    }
    // ready: the previous run's follow-up (or this session's fresh interpreter after a reset
    // reported in `done`); session_reset: a restart that crossed this run's op.
    if (NoteIdleEvent(event)) continue;
    // Only this run's events count: others are stale ones of an earlier run.
    if (const auto* started = std::get_if<StartedEvent>(&event); started && started->id == run_id) {
      observer.OnStarted();
    } else if (const auto* ask = std::get_if<InputRequestEvent>(&event); ask && ask->id == run_id) {
      AskObserver(*ask, interactive, monitor, observer);
    } else if (const auto* image = std::get_if<ImageEvent>(&event); image && image->id == run_id) {
      collector.OnImage(*image);
    } else if (const auto* file = std::get_if<FileEvent>(&event); file && file->id == run_id) {
      collector.OnFile(*file);
    } else if (const auto* done = std::get_if<DoneEvent>(&event); done && done->id == run_id) {
      return FinishRun(*done, start, collector);
    }
  }
}

exec::RunResult HarnessSandbox::FinishRun(const DoneEvent& done, Clock::time_point start,
                                          ResultCollector& collector) {
  ++run_count_;
  prepared_ = false;  // until the `ready` that follows: the next run's processes fork
  if (setup_.pool.mode == config::PoolMode::kFresh && !setup_.session) used_up_ = true;
  exec::RunResult result = collector.Finish(
      done, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
  if (result.verdict == exec::Verdict::kInternal) MarkBroken("internal verdict: " + result.detail);
  return result;
}

}  // namespace sandbox::runner
