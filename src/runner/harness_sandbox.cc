#include "sandbox/runner/harness_sandbox.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/core/json.h"
#include "sandbox/core/log_safe.h"
#include "sandbox/runner/harness_source.h"
#include "sandbox/runner/result_checks.h"
#include "sandbox/runner/sandbox_spec.h"

namespace sandbox::runner {
namespace {

using engine::Clock;
using engine::Deadline;
using engine::DeadlineAfter;
using nlohmann::json;

// A harness frame's JSON, nesting-bounded like every JSON from outside (the run's code can
// write frames of its own making); a discarded value when it is not usable.
json ParseFrameJson(std::string_view payload) {
  auto parsed = ParseJson(payload);
  return parsed.ok() ? std::move(parsed).value() : json(json::value_t::discarded);
}

constexpr std::size_t kStderrTailBytes = 4096;
// The harness's stderr lines one run (or the time between two runs) may put in the server's log,
// and the bytes of each: the harness logs the claims it refuses, and the run's code can make
// it refuse thousands. The rest is counted into one line (CloseLogBudget).
constexpr int kHarnessLogLines = 16;
constexpr std::size_t kHarnessLogLineBytes = 512;
// The final expression's repr: the harness bounds it by value_max_chars (characters, up to 4
// bytes each, plus its marker); the server's own bound on top.
constexpr std::size_t kMaxValueBytes =
    static_cast<std::size_t>(kResultLimits.value_max_chars) * 4 + 64;
// The prompt of an input() ask: the harness cuts it at input_max_prompt_chars characters.
constexpr std::size_t kMaxPromptBytes =
    static_cast<std::size_t>(kResultLimits.input_max_prompt_chars) * 4;
// How often a run's read loop looks at cancellation and its deadline while output is quiet.
constexpr auto kPollSlice = std::chrono::milliseconds(200);
// A cancel the harness has not answered after this is re-sent once, then the container killed.
constexpr auto kCancelResend = std::chrono::milliseconds(400);
constexpr auto kCancelKill = std::chrono::milliseconds(900);
// Room beyond the run's memory budget for the zygote relaying the run's output and records
// (one file piece, one figure and output chunks at a time): the relay never counts against
// the budget.
constexpr std::int64_t kRelayHeadroomBytes = 12LL << 20;

// Every field, always: the harness has no defaults (cpu_s 0: derived from the timeout;
// memory_bytes 0: the container's limit only).
json HarnessLimits(const RunLimits& l) {
  return {{"timeout_s", l.timeout_s},
          {"output_bytes", l.output_bytes},
          {"nproc", l.nproc},
          {"nofile", l.nofile},
          {"fsize_bytes", l.fsize_bytes},
          {"cpu_s", l.cpu_s},
          {"memory_bytes", l.memory_bytes}};
}

std::string JsonString(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A member of another type counts as false: json::value() would throw out of the run.
bool JsonBool(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::optional<std::int64_t> JsonInt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  return JsonInteger(*it);
}

// Base64 of `bytes` raw bytes.
std::size_t Base64Bytes(std::int64_t bytes) {
  return static_cast<std::size_t>((std::max<std::int64_t>(bytes, 0) + 2) / 3 * 4);
}

// The harness's own file pieces (workdir.py FILE_PIECE).
constexpr std::int64_t kFilePieceBytes = 3 << 18;
// Everything in a frame besides its one large value; and the largest frame without one (a
// `done` with its traceback and value, a file listing).
constexpr std::size_t kFrameFieldsBytes = 64 << 10;
constexpr std::size_t kSmallFrameBytes = 4 << 20;

}  // namespace

std::size_t MaxFrameBytes(const SandboxSetup& setup) {
  const std::int64_t largest_value =
      std::max({setup.output.max_figure_bytes, kFilePieceBytes,
                setup.session ? setup.session_file_bytes : std::int64_t{0}});
  return std::max(kSmallFrameBytes, Base64Bytes(largest_value) + kFrameFieldsBytes);
}

json HarnessConfig(const SandboxSetup& setup) {
  const auto& pool = setup.pool;
  const auto& out = setup.output;
  json config = {
      {"op", "config"},
      {"mode", setup.session                           ? "session"
               : pool.mode == config::PoolMode::kFresh ? "fresh"
                                                       : "recycle"},
      {"op_timeout_s", static_cast<double>(setup.op_timeout.count()) / 1000.0},
      {"watchdog_s", setup.session ? static_cast<double>(setup.watchdog.count()) / 1000.0 : 0.0},
      {"preload", pool.preload},
      {"warm_plot", pool.warm_plot},
      {"seccomp_bpf",
       setup.run_filter_bpf.empty() ? json(nullptr) : json(Base64Encode(setup.run_filter_bpf))},
      // gVisor may not offer user namespaces: fall back to process isolation there, and say so.
      {"isolate", pool.runtime == "runsc" ? json("auto") : json(true)},
      {"interactive_input", pool.interactive_input},
      {"workdir", setup.workdir},
      {"tmpfs_size_bytes", pool.limits.tmpfs_bytes},
      {"image",
       {{"max_figures", out.max_figures},
        {"max_width_px", out.max_figure_px},
        {"max_height_px", out.max_figure_px},
        {"max_bytes", out.max_figure_bytes},
        {"max_total_bytes", out.max_figures_bytes},
        {"dpi", out.figure_dpi}}},
      {"files_out", {{"max_count", out.max_files}, {"max_total_bytes", out.max_files_bytes}}},
      {"files_in",
       {{"max_count", setup.input.max_files}, {"max_total_bytes", setup.input.max_total_bytes}}},
      {"limits", HarnessLimits(pool.limits)},
  };
  AddResultLimits(config);
  return config;
}

// Connects a run's CancelToken and its input replies to the sandbox for the duration of the run
// only: both may outlive the run (and the sandbox), so they reach the sandbox through this.
struct HarnessSandbox::RunLink {
  std::mutex mu;
  HarnessSandbox* sandbox = nullptr;  // null once the run is over
  std::string run_id;
  std::atomic<bool> fired{false};
  Clock::time_point fired_at;
};

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
  // The engine removes what it made when the launch fails or is cancelled.
  auto launched = engine.Launch(BuildSandboxSpec(input), deadline, cancel);
  if (!launched.ok()) return launched.error();
  ContainerHandle handle(&engine, launched->id, logger);

  std::unique_ptr<HarnessSandbox> sandbox(new HarnessSandbox(
      engine, setup, std::move(handle), std::move(launched->stream), std::move(logger)));
  sandbox->session_id_ = std::move(extras.session_id);
  auto booted = sandbox->Boot(deadline, cancel);
  if (!booted.ok()) return booted.error();
  sandbox->NarrowToRunLimits(deadline);
  return sandbox;
}

Result<std::unique_ptr<HarnessSandbox>> HarnessSandbox::Adopt(
    const engine::ContainerEngine& engine, const SandboxSetup& setup,
    const std::string& container_id, std::shared_ptr<spdlog::logger> logger) {
  ContainerHandle handle(&engine, container_id, logger);
  auto stream = engine.Reattach(handle.id(), DeadlineAfter(setup.start_timeout));
  if (!stream.ok()) return stream.error().WithContext("attach to session container");
  std::unique_ptr<HarnessSandbox> sandbox(
      new HarnessSandbox(engine, setup, std::move(handle), std::move(*stream), std::move(logger)));
  sandbox->prepared_ = true;  // a session harness between calls
  return sandbox;
}

void HarnessSandbox::Leave() {
  if (stream_) stream_->Close();
  stream_.reset();
  container_.Release();
  broken_ = true;
}

void HarnessSandbox::NarrowToRunLimits(Deadline deadline) {
  const auto& pool = setup_.pool;
  // gVisor's cgroup files describe its own sandbox, not the container's: keep the ceiling.
  if (pool.runtime == "runsc") return;
  auto cgroup = ready_info_.find("cgroup");
  if (cgroup == ready_info_.end() || !cgroup->is_object()) return;
  auto number = [&](const char* key) {
    auto it = cgroup->find(key);
    return it == cgroup->end() ? std::optional<std::int64_t>() : JsonInteger(*it);
  };
  engine::ResourceUpdate update;
  if (auto held = number("memory_bytes"); held && *held > 0) {
    update.memory_bytes = std::min(ContainerMemoryBytes(pool),
                                   *held + pool.limits.memory_bytes + kRelayHeadroomBytes);
  }
  // The prepared run process is among the harness's tasks, and it is the code's first one.
  if (auto tasks = number("pids"); tasks && *tasks > 0) {
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
  SANDBOX_RETURN_IF_ERROR(SendJson(HarnessConfig(setup_), deadline));
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
    json msg = ParseFrameJson((*frame)->payload);
    if (msg.is_discarded()) return Error(ErrorCode::kProtocol, "harness sent invalid JSON");
    auto ev = JsonString(msg, "ev");
    if (ev == "ready") {
      ready_info_ = std::move(msg);
      prepared_ = true;
      if (logger_) {
        logger_->debug("sandbox {} ready: python {}, isolation {}, run tree {}", Name(),
                       LogValue(JsonString(ready_info_, "python")),
                       LogValue(JsonString(ready_info_, "isolation")),
                       LogValue(JsonString(ready_info_, "run_tree")));
      }
      return OkStatus();
    }
    if (ev == "fatal") {
      return Error(ErrorCode::kInternal,
                   "the harness failed to start: " + JsonString(msg, "message") +
                       "; stderr: " + StderrTail());
    }
  }
}

Status HarnessSandbox::SendJson(const json& message, Deadline deadline) {
  auto frame =
      EncodeFrame(FrameKind::kJson, message.dump(-1, ' ', false, json::error_handler_t::replace));
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

bool HarnessSandbox::NoteIdleMessage(json& msg) {
  const std::string ev = JsonString(msg, "ev");
  if (ev == "ready") {
    ready_info_ = std::move(msg);
    prepared_ = true;
    return true;
  }
  if (ev == "session_reset") {
    // The interpreter died between calls; the harness has already prepared a fresh one.
    session_notice_ = "the session was restarted empty since the last call (" +
                      JsonString(msg, "reason") + "); variables and files are gone";
    if (logger_) {
      logger_->info("sandbox {}: session restarted: {}", Name(),
                    LogQuoted(JsonString(msg, "reason")));
    }
    return true;
  }
  return false;
}

Result<PingInfo> HarnessSandbox::Ping() {
  if (broken_) return Error(ErrorCode::kUnavailable, "the sandbox is broken");
  const Deadline deadline = DeadlineAfter(std::chrono::seconds(5));
  if (auto sent = SendJson(json{{"op", "ping"}}, deadline); !sent.ok()) {
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
    json msg = ParseFrameJson((*frame)->payload);
    if (msg.is_discarded() || !msg.is_object()) {
      MarkBroken("invalid JSON while idle");
      return Error(ErrorCode::kProtocol, "the sandbox sent an invalid message");
    }
    if (JsonString(msg, "ev") == "pong") {
      PingInfo info;
      info.memory_bytes = JsonInt(msg, "memory_bytes");
      return info;
    }
    if (NoteIdleMessage(msg)) continue;
    MarkBroken("unexpected message while idle: " + JsonString(msg, "ev"));
    return Error(ErrorCode::kProtocol, "the sandbox sent an unexpected message");
  }
}

bool HarnessSandbox::Healthy() { return Ping().ok(); }

Status HarnessSandbox::BeginSession(const RunLimits& limits, const SessionTerms& terms) {
  json op = {{"op", "session"}, {"limits", HarnessLimits(limits)}};
  if (!terms.record.is_null()) op["record"] = terms.record;
  if (terms.watchdog) op["watchdog_s"] = static_cast<double>(terms.watchdog->count());
  auto reply = SessionOp(std::move(op));
  if (!reply.ok()) return reply.error().WithContext("start the session");
  return OkStatus();
}

Result<ResumeInfo> HarnessSandbox::Resume() {
  auto reply = SessionOp(json{{"op", "resume"}});
  if (!reply.ok()) return reply.error();
  ResumeInfo info;
  if (auto it = reply->find("record"); it != reply->end()) info.record = *it;
  if (auto it = reply->find("idle_s"); it != reply->end() && it->is_number()) {
    info.idle_s = it->get<double>();
  }
  info.protocol = static_cast<int>(JsonInt(*reply, "protocol").value_or(0));
  return info;
}

namespace {

exec::SessionFile ParseFileEntry(const json& j) {
  exec::SessionFile f;
  f.path = JsonString(j, "path");
  f.size = JsonInt(j, "size").value_or(0);
  f.mime_type = CheckedMimeType(JsonString(j, "mime_type"));
  if (auto it = j.find("mtime"); it != j.end() && it->is_number()) {
    f.mtime_unix_s = it->get<double>();
  }
  return f;
}

}  // namespace

Result<std::vector<exec::SessionFile>> HarnessSandbox::PutFiles(
    const std::vector<exec::InputFile>& files) {
  json list = json::array();
  for (const auto& f : files) {
    list.push_back({{"path", f.path}, {"content_b64", Base64Encode(f.content)}});
  }
  auto reply = SessionOp(json{{"op", "put_files"}, {"files", std::move(list)}});
  if (!reply.ok()) return reply.error();
  std::vector<exec::SessionFile> out;
  if (auto it = reply->find("files"); it != reply->end() && it->is_array()) {
    for (const auto& f : *it) {
      if (f.is_object()) out.push_back(ParseFileEntry(f));
    }
  }
  return out;
}

Result<exec::SessionFileList> HarnessSandbox::ListFiles() {
  auto reply = SessionOp(json{{"op", "list_files"}});
  if (!reply.ok()) return reply.error();
  exec::SessionFileList out;
  out.truncated = JsonBool(*reply, "truncated");
  if (auto it = reply->find("files"); it != reply->end() && it->is_array()) {
    for (const auto& f : *it) {
      if (!f.is_object()) continue;
      auto entry = ParseFileEntry(f);
      // Checked again here (the zygote checked the session's answer): an entry whose path
      // is not a valid result path is dropped and marked, never passed on.
      if (!ResultPathError(entry.path).empty()) {
        out.truncated = true;
        continue;
      }
      out.files.push_back(std::move(entry));
    }
  }
  return out;
}

Result<exec::OutputFile> HarnessSandbox::GetFile(const std::string& path, std::int64_t max_bytes) {
  auto reply = SessionOp(json{{"op", "get_file"}, {"path", path}, {"max_bytes", max_bytes}});
  if (!reply.ok()) return reply.error();
  auto data = Base64Decode(JsonString(*reply, "data_b64"));
  if (!data.ok()) return Error(ErrorCode::kProtocol, "the sandbox sent a file that is not base64");
  exec::OutputFile file;
  file.path = JsonString(*reply, "path");
  if (file.path.empty()) file.path = path;
  file.mime_type = CheckedMimeType(JsonString(*reply, "mime_type"));
  file.data = std::move(*data);
  file.size = static_cast<std::int64_t>(file.data.size());
  return file;
}

Status HarnessSandbox::DeleteFile(const std::string& path) {
  auto reply = SessionOp(json{{"op", "delete_file"}, {"path", path}});
  if (!reply.ok()) return reply.error();
  return OkStatus();
}

std::string HarnessSandbox::TakeSessionNotice() { return std::exchange(session_notice_, {}); }

Result<json> HarnessSandbox::SessionOp(json op) {
  if (!Reusable()) return Error(ErrorCode::kUnavailable, "the session's sandbox is not usable");
  const std::string id = "op-" + std::to_string(++run_seq_);
  op["id"] = id;
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
      MarkBroken("no answer to " + JsonString(op, "op"));
      return Error(ErrorCode::kUnavailable, "the session's sandbox stopped answering");
    }
    if ((*frame)->kind != FrameKind::kJson) continue;  // output of a background thread
    json msg = ParseFrameJson((*frame)->payload);
    if (msg.is_discarded() || !msg.is_object()) {
      MarkBroken("invalid JSON from the harness");
      return Error(ErrorCode::kProtocol, "the sandbox sent an invalid message");
    }
    const std::string ev = JsonString(msg, "ev");
    if (ev == "fatal") {
      MarkBroken("harness fatal: " + JsonString(msg, "message"));
      return Error(ErrorCode::kUnavailable, "the sandbox failed: " + JsonString(msg, "message"));
    }
    if (ev == "reply" && JsonString(msg, "id") == id) {
      if (JsonBool(msg, "ok")) {
        auto it = msg.find("result");
        return it != msg.end() ? *it : json::object();
      }
      std::string error = JsonString(msg, "error");
      if (error.empty()) error = "the sandbox refused the request";
      ErrorCode code = ErrorCode::kInvalidArgument;
      if (error.rfind("no such file", 0) == 0) {
        code = ErrorCode::kNotFound;
      } else if (error.find("more than the limit") != std::string::npos ||
                 error.find("no space left") != std::string::npos) {
        code = ErrorCode::kLimit;
      } else if (error.find("timed out") != std::string::npos ||
                 error.find("restarted") != std::string::npos) {
        code = ErrorCode::kUnavailable;
      }
      return Error(code, error);
    }
    if (ev == "pong" || NoteIdleMessage(msg)) continue;
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
    json msg = ParseFrameJson((*frame)->payload);
    if (msg.is_discarded() || !msg.is_object()) continue;
    if (JsonString(msg, "ev") == "fatal") {
      MarkBroken("harness fatal while idle: " + JsonString(msg, "message"));
      return false;
    }
    if (NoteIdleMessage(msg) && prepared_) return true;  // `ready` sets prepared_
  }
}

void HarnessSandbox::AskObserver(const json& msg, bool interactive,
                                 const std::shared_ptr<RunLink>& link,
                                 exec::RunObserver& observer) {
  const auto seq = JsonInt(msg, "seq");
  // The harness only asks in interactive runs (it has no channel to wait on otherwise).
  if (!seq || !interactive) return;
  exec::InputReply reply = [link, seq = *seq](std::optional<std::string> line) {
    std::lock_guard lock(link->mu);
    if (link->sandbox == nullptr) return;  // the run is over
    (void)link->sandbox->SendJson(json{{"op", "input_reply"},
                                       {"id", link->run_id},
                                       {"seq", seq},
                                       {"line", line ? json(*line) : json(nullptr)}},
                                  DeadlineAfter(std::chrono::seconds(2)));
  };
  exec::InputRequest request;
  request.seq = static_cast<int>(*seq);
  request.prompt = CutText(JsonString(msg, "prompt"), kMaxPromptBytes);
  observer.OnInputRequest(request, reply);
}

exec::RunResult HarnessSandbox::Run(const std::string& code,
                                    const std::vector<exec::InputFile>& files,
                                    const RunLimits& limits, exec::RunObserver& observer,
                                    const exec::CancelToken& cancel) {
  exec::RunResult result;
  result.pool = setup_.pool.name;
  result.engine = engine_.name();
  result.sandbox_id = container_id().substr(0, 12);
  auto fail = [&](exec::Verdict verdict, const std::string& detail) {
    result.verdict = verdict;
    result.detail = detail;
    return result;
  };
  if (!Reusable()) return fail(exec::Verdict::kInternal, "the sandbox is not usable");
  if (cancel.IsCancelled()) return fail(exec::Verdict::kCancelled, "cancelled before it started");

  const std::string run_id = "run-" + std::to_string(++run_seq_);
  // The lines held back since the last run are reported before this run's budget opens; this
  // run's when it ends, however it ends.
  CloseLogBudget("before " + run_id);
  struct CloseBudget {
    HarnessSandbox* sandbox;
    std::string run_id;
    ~CloseBudget() { sandbox->CloseLogBudget(run_id); }
  } close_budget{this, run_id};
  auto note_dropped = [this](const std::string& why) {
    if (log_budget_.events_dropped++ == 0) log_budget_.first_drop = why;
  };
  json file_list = json::array();
  for (const auto& f : files) {
    file_list.push_back({{"path", f.path}, {"content_b64", Base64Encode(f.content)}});
  }
  const bool interactive = setup_.pool.interactive_input && observer.AnswersInput();
  json op = {{"op", "run"},
             {"id", run_id},
             {"code", code},
             {"files", file_list},
             {"limits", HarnessLimits(limits)},
             {"stdin", interactive ? "interactive" : "eof"}};
  const auto start = Clock::now();
  const auto timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(limits.timeout_s * 1000)));
  const Deadline hard_deadline = start + timeout + setup_.run_grace;
  if (auto sent = SendJson(op, DeadlineAfter(std::chrono::seconds(30))); !sent.ok()) {
    MarkBroken("run could not be sent: " + sent.error().ToString());
    return fail(exec::Verdict::kInternal,
                "the sandbox did not accept the run: " + sent.error().message());
  }

  auto link = std::make_shared<RunLink>();
  link->sandbox = this;
  link->run_id = run_id;
  cancel.OnCancel([link] {
    std::lock_guard lock(link->mu);
    if (link->sandbox == nullptr || link->fired.load()) return;
    link->fired_at = Clock::now();
    link->fired = true;
    (void)link->sandbox->SendJson(json{{"op", "cancel"}, {"id", link->run_id}},
                                  DeadlineAfter(std::chrono::seconds(2)));
  });
  // Whatever happens below, the token must not reach this sandbox after the run.
  struct Unlink {
    std::shared_ptr<RunLink> link;
    ~Unlink() {
      std::lock_guard lock(link->mu);
      link->sandbox = nullptr;
    }
  } unlink{link};

  bool resent_cancel = false;
  bool server_dropped_files = false;   // a file event failed the server's own checks
  bool server_dropped_images = false;  // an image event did
  std::size_t file_bytes = 0;
  std::size_t image_bytes = 0;
  // The harness cuts output at the run's limit (plus its marker); the server holds no more
  // than that either, whatever the harness sends.
  const std::size_t output_bound =
      static_cast<std::size_t>(std::max<std::int64_t>(limits.output_bytes, 0)) + 256;
  auto keep_output = [&](std::string& into, std::string_view bytes) {
    const std::size_t held = result.stdout_text.size() + result.stderr_text.size();
    const std::size_t room = held < output_bound ? output_bound - held : 0;
    if (bytes.size() > room) result.output_truncated = true;
    into.append(bytes.substr(0, room));
  };
  // The returned file being assembled from its pieces (the harness sends a file in pieces,
  // offset 0 first, the last one marked); kept only once its last piece arrived.
  std::optional<exec::OutputFile> piece_file;
  while (true) {
    const auto now = Clock::now();
    if (link->fired.load()) {
      Clock::time_point fired_at;
      {
        std::lock_guard lock(link->mu);
        fired_at = link->fired_at;
      }
      if (!resent_cancel && now - fired_at > kCancelResend) {
        // The first cancel may have crossed the run op before the harness started the run.
        resent_cancel = true;
        (void)SendJson(json{{"op", "cancel"}, {"id", run_id}},
                       DeadlineAfter(std::chrono::seconds(1)));
      } else if (now - fired_at > kCancelKill) {
        container_.Kill();
        MarkBroken("the harness did not answer a cancel");
        return fail(exec::Verdict::kCancelled, "cancelled; the sandbox was killed");
      }
    }
    if (now >= hard_deadline) {
      container_.Kill();
      MarkBroken("the harness did not end a run at its deadline");
      return fail(exec::Verdict::kTimeout,
                  "the run exceeded its time limit and the sandbox was killed");
    }
    auto frame = NextFrame(std::min(hard_deadline, now + kPollSlice));
    if (!frame.ok()) {
      if (frame.error().code() == ErrorCode::kTimeout) continue;
      MarkBroken("stream failed: " + frame.error().ToString());
      return fail(exec::Verdict::kInternal,
                  "lost the sandbox during the run: " + frame.error().message());
    }
    if (!frame->has_value()) {
      MarkBroken("the sandbox exited during a run");
      return fail(exec::Verdict::kInternal,
                  "the sandbox exited during the run" +
                      (StderrTail().empty() ? std::string() : ": " + StderrTail()));
    }
    Frame& f = **frame;
    if (f.kind == FrameKind::kStdout) {
      observer.OnOutput(exec::Stream::kStdout, f.payload);
      keep_output(result.stdout_text, f.payload);
      continue;
    }
    if (f.kind == FrameKind::kStderr) {
      observer.OnOutput(exec::Stream::kStderr, f.payload);
      keep_output(result.stderr_text, f.payload);
      continue;
    }
    json msg = ParseFrameJson(f.payload);
    if (msg.is_discarded() || !msg.is_object()) {
      MarkBroken("invalid JSON from the harness");
      return fail(exec::Verdict::kInternal, "the sandbox sent an invalid message");
    }
    const std::string ev = JsonString(msg, "ev");
    if (ev == "pong") continue;
    if (ev == "ready" || ev == "session_reset") {
      // ready: the previous run's follow-up (or this session's fresh interpreter after a reset
      // reported in `done`); session_reset: a restart that crossed this run's op.
      NoteIdleMessage(msg);
      continue;
    }
    if (ev == "fatal") {
      MarkBroken("harness fatal: " + JsonString(msg, "message"));
      return fail(exec::Verdict::kInternal, "the sandbox failed: " + JsonString(msg, "message"));
    }
    if (JsonString(msg, "id") != run_id) continue;  // a stale event of an earlier run
    if (ev == "started") {
      observer.OnStarted();
    } else if (ev == "input_request") {
      AskObserver(msg, interactive, link, observer);
    } else if (ev == "image") {
      // Checked again here (the zygote checked the run's record): bounds of the pool's output.
      const auto width = JsonInt(msg, "width").value_or(0);
      const auto height = JsonInt(msg, "height").value_or(0);
      const auto& out = setup_.output;
      if (std::cmp_greater_equal(result.images.size(), out.max_figures) || width <= 0 ||
          height <= 0 || width > out.max_figure_px || height > out.max_figure_px) {
        server_dropped_images = true;
        note_dropped("an image out of bounds");
        continue;
      }
      auto data = Base64Decode(JsonString(msg, "data_b64"));
      if (!data.ok() || std::cmp_greater(data->size(), out.max_figure_bytes) ||
          std::cmp_greater(image_bytes + data->size(), out.max_figures_bytes)) {
        server_dropped_images = true;
        continue;
      }
      image_bytes += data->size();
      exec::Image image;
      image.mime_type = "image/png";
      image.width = static_cast<int>(width);
      image.height = static_cast<int>(height);
      image.data = std::move(*data);
      observer.OnImage(image);
      result.images.push_back(std::move(image));
    } else if (ev == "file") {
      // Checked again here (the zygote checked the run's record): a file failing a check is
      // dropped and marked (files_truncated), never passed on.
      std::string path = JsonString(msg, "path");
      if (auto bad = ResultPathError(path); !bad.empty()) {
        server_dropped_files = true;
        note_dropped("a file whose path is " + bad);
        continue;
      }
      auto data = Base64Decode(JsonString(msg, "data_b64"));
      const auto offset_it = msg.find("offset");
      const auto offset =
          offset_it == msg.end() ? std::optional<std::int64_t>() : JsonInteger(*offset_it);
      const auto& out = setup_.output;
      if (offset && *offset == 0) {
        if (piece_file) server_dropped_files = true;  // the previous one never ended
        piece_file.reset();
        if (std::cmp_less(result.files.size(), out.max_files)) {
          piece_file.emplace();
          piece_file->path = path;
          piece_file->mime_type = CheckedMimeType(JsonString(msg, "mime_type"));
        }
      }
      if (!data.ok() || !offset || !piece_file || piece_file->path != path ||
          std::cmp_not_equal(piece_file->data.size(), *offset) ||
          std::cmp_greater(file_bytes + data->size(), out.max_files_bytes)) {
        server_dropped_files = true;
        piece_file.reset();
        continue;
      }
      file_bytes += data->size();
      piece_file->data.append(*data);
      if (!JsonBool(msg, "last")) continue;
      exec::OutputFile file = std::move(*piece_file);
      piece_file.reset();
      file.size = static_cast<std::int64_t>(file.data.size());
      observer.OnFile(file);
      result.files.push_back(std::move(file));
    } else if (ev == "done") {
      ++run_count_;
      prepared_ = false;  // until the `ready` that follows: the next run's processes fork
      if (setup_.pool.mode == config::PoolMode::kFresh && !setup_.session) used_up_ = true;
      result.session_reset = JsonBool(msg, "session_reset");
      result.verdict =
          exec::ParseVerdict(JsonString(msg, "verdict")).value_or(exec::Verdict::kInternal);
      result.exit_code = static_cast<int>(JsonInt(msg, "exit_code").value_or(-1));
      if (auto sig = JsonInt(msg, "signal")) result.signal = static_cast<int>(*sig);
      result.duration_ms =
          JsonInt(msg, "duration_ms")
              .value_or(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start)
                            .count());
      if (auto v = msg.find("value"); v != msg.end() && v->is_string())
        result.value = v->get<std::string>();
      if (auto tb = msg.find("traceback"); tb != msg.end() && tb->is_object()) {
        result.traceback = BoundedTraceback(*tb);
      }
      if (result.value) result.value = CutText(*result.value, kMaxValueBytes);
      result.output_truncated = result.output_truncated || JsonBool(msg, "output_truncated");
      if (piece_file) server_dropped_files = true;  // its last piece never came
      result.files_truncated = JsonBool(msg, "files_truncated") || server_dropped_files;
      result.images_truncated = JsonBool(msg, "images_truncated") || server_dropped_images;
      result.detail = JsonString(msg, "detail");
      if (result.verdict == exec::Verdict::kInternal)
        MarkBroken("internal verdict: " + result.detail);
      return result;
    }
  }
}

}  // namespace sandbox::runner
