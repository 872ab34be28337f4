#include "harness_protocol.h"

#include <algorithm>
#include <utility>

#include "sandbox/core/base64.h"
#include "sandbox/core/json.h"
#include "sandbox/runner/harness_frames.h"
#include "sandbox/runner/harness_wire.h"
#include "sandbox/runner/result_checks.h"

namespace sandbox::runner {
namespace {

using nlohmann::json;

std::string JsonString(const json& j, std::string_view key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A member of another type counts as false: json::value() would throw out of the run.
bool JsonBool(const json& j, std::string_view key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::optional<std::int64_t> JsonInt(const json& j, std::string_view key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  return JsonInteger(*it);
}

// A request: its op, then its fields.
json Request(std::string_view op, json fields = json::object()) {
  fields[wire::kOp] = op;
  return fields;
}

json InputFiles(const std::vector<exec::InputFile>& files) {
  namespace f = wire::input_file;
  json list = json::array();
  for (const auto& file : files) {
    list.push_back({{f::kPath, file.path}, {f::kContentB64, Base64Encode(file.content)}});
  }
  return list;
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

exec::SessionFile FileEntry(const json& j) {
  namespace f = wire::op::list_files::result::files;
  exec::SessionFile file;
  file.path = JsonString(j, f::kPath);
  file.size = JsonInt(j, f::kSize).value_or(0);
  file.mime_type = CheckedMimeType(JsonString(j, f::kMimeType));
  if (auto it = j.find(f::kMtime); it != j.end() && it->is_number()) {
    file.mtime_unix_s = it->get<double>();
  }
  return file;
}

// The entries of a reply's `files`, each an object.
std::vector<exec::SessionFile> FileEntries(const json& result, std::string_view key) {
  std::vector<exec::SessionFile> out;
  if (auto it = result.find(key); it != result.end() && it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.is_object()) out.push_back(FileEntry(entry));
    }
  }
  return out;
}

}  // namespace

json ConfigRequest(const SandboxSetup& setup) {
  namespace c = wire::op::config;
  const auto& pool = setup.pool;
  const auto& out = setup.output;
  const auto& bounds = kResultLimits;
  namespace counts = wire::count_bounds;
  return Request(
      c::kName,
      {
          {c::kMode, setup.session                           ? c::kModeSession
                     : pool.mode == config::PoolMode::kFresh ? c::kModeFresh
                                                             : c::kModeRecycle},
          {c::kOpTimeoutS, static_cast<double>(setup.op_timeout.count()) / 1000.0},
          {c::kWatchdogS,
           setup.session ? static_cast<double>(setup.watchdog.count()) / 1000.0 : 0.0},
          {c::kPreload, pool.preload},
          {c::kWarmPlot, pool.warm_plot},
          {c::kSeccompBpf,
           setup.run_filter_bpf.empty() ? json(nullptr) : json(Base64Encode(setup.run_filter_bpf))},
          // gVisor may lack user namespaces: fall back to process isolation there, and say so.
          {c::kIsolate, pool.runtime == "runsc" ? json("auto") : json(true)},
          {c::kInteractiveInput, pool.interactive_input},
          {c::kWorkdir, setup.workdir},
          {c::kTmpfsSizeBytes, pool.limits.tmpfs_bytes},
          {c::kImage,
           {{c::image::kMaxFigures, out.max_figures},
            {c::image::kMaxWidthPx, out.max_figure_px},
            {c::image::kMaxHeightPx, out.max_figure_px},
            {c::image::kMaxBytes, out.max_figure_bytes},
            {c::image::kMaxTotalBytes, out.max_figures_bytes},
            {c::image::kDpi, out.figure_dpi}}},
          {c::kFilesOut,
           {{counts::kMaxCount, out.max_files}, {counts::kMaxTotalBytes, out.max_files_bytes}}},
          {c::kFilesIn,
           {{counts::kMaxCount, setup.input.max_files},
            {counts::kMaxTotalBytes, setup.input.max_total_bytes}}},
          {c::kLimits, HarnessLimits(pool.limits)},
          // The bounds the server checks results against (result_checks.h), the same numbers.
          {c::kTraceback,
           {{c::traceback::kMaxFrames, bounds.traceback_max_frames},
            {c::traceback::kMaxMessageBytes, bounds.traceback_max_message_bytes},
            {c::traceback::kMaxNameBytes, bounds.traceback_max_name_bytes},
            {c::traceback::kMaxTotalBytes, bounds.traceback_max_total_bytes}}},
          {c::kPaths,
           {{c::paths::kMaxPathBytes, bounds.path_max_bytes},
            {c::paths::kMaxNameBytes, bounds.name_max_bytes}}},
          {c::kWalk,
           {{c::walk::kMaxEntries, bounds.walk_max_entries},
            {c::walk::kMaxDepth, bounds.walk_max_depth}}},
          {c::kInput,
           {{c::input::kMaxAsks, bounds.input_max_asks},
            {c::input::kMaxPromptChars, bounds.input_max_prompt_chars},
            {c::input::kMaxLineBytes, bounds.input_max_line_bytes}}},
          {c::kValueMaxChars, bounds.value_max_chars},
          {c::kListMaxEntries, bounds.list_max_entries},
      });
}

json HarnessLimits(const RunLimits& l) {
  namespace f = wire::limits;
  return {
      {f::kTimeoutS, l.timeout_s},
      {f::kOutputBytes, l.output_bytes},
      {f::kNproc, l.nproc},
      {f::kNofile, l.nofile},
      {f::kFsizeBytes, l.fsize_bytes},
      {f::kCpuS, l.cpu_s},
      {f::kMemoryBytes, l.memory_bytes},
  };
}

json RunRequest(std::string_view id, std::string_view code,
                const std::vector<exec::InputFile>& files, const RunLimits& limits,
                bool interactive) {
  namespace r = wire::op::run;
  return Request(r::kName, {{r::kId, id},
                            {r::kCode, code},
                            {r::kFiles, InputFiles(files)},
                            {r::kLimits, HarnessLimits(limits)},
                            {r::kStdin, interactive ? r::kStdinInteractive : r::kStdinEof}});
}

json CancelRequest(std::string_view id) {
  return Request(wire::op::cancel::kName, {{wire::op::cancel::kId, id}});
}

json InputReplyRequest(std::string_view id, std::int64_t seq,
                       const std::optional<std::string>& line) {
  namespace r = wire::op::input_reply;
  return Request(r::kName,
                 {{r::kId, id}, {r::kSeq, seq}, {r::kLine, line ? json(*line) : json(nullptr)}});
}

json PingRequest() { return Request(wire::op::ping::kName); }

json SessionRequest(std::string_view id, const RunLimits& limits, const SessionTerms& terms) {
  namespace s = wire::op::session;
  json op = Request(s::kName, {{s::kId, id}, {s::kLimits, HarnessLimits(limits)}});
  if (!terms.record.is_null()) op[s::kRecord] = terms.record;
  if (terms.watchdog) op[s::kWatchdogS] = static_cast<double>(terms.watchdog->count());
  return op;
}

json ResumeRequest(std::string_view id) {
  return Request(wire::op::resume::kName, {{wire::op::resume::kId, id}});
}

json PutFilesRequest(std::string_view id, const std::vector<exec::InputFile>& files) {
  namespace p = wire::op::put_files;
  return Request(p::kName, {{p::kId, id}, {p::kFiles, InputFiles(files)}});
}

json ListFilesRequest(std::string_view id) {
  return Request(wire::op::list_files::kName, {{wire::op::list_files::kId, id}});
}

json GetFileRequest(std::string_view id, std::string_view path, std::int64_t max_bytes) {
  namespace g = wire::op::get_file;
  return Request(g::kName, {{g::kId, id}, {g::kPath, path}, {g::kMaxBytes, max_bytes}});
}

json DeleteFileRequest(std::string_view id, std::string_view path) {
  namespace d = wire::op::delete_file;
  return Request(d::kName, {{d::kId, id}, {d::kPath, path}});
}

std::string RequestName(const json& request) { return JsonString(request, wire::kOp); }

std::string EncodeRequest(const json& request) {
  return EncodeFrame(FrameKind::kJson,
                     request.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::size_t MaxFrameBytes(const SandboxSetup& setup) {
  const std::int64_t largest_value =
      std::max({setup.output.max_figure_bytes, kFilePieceBytes,
                setup.session ? setup.session_file_bytes : std::int64_t{0}});
  return std::max(kSmallFrameBytes, Base64Bytes(largest_value) + kFrameFieldsBytes);
}

HarnessEvent DecodeEvent(std::string_view payload) {
  auto parsed = ParseJson(payload);
  if (!parsed.ok()) return InvalidMessage{false};
  json msg = std::move(parsed).value();
  if (!msg.is_object()) return InvalidMessage{true};
  const std::string ev = JsonString(msg, wire::kEv);
  if (ev == wire::ev::ready::kName) return ReadyEvent{std::move(msg)};
  if (ev == wire::ev::started::kName) return StartedEvent{JsonString(msg, wire::ev::started::kId)};
  if (ev == wire::ev::input_request::kName) {
    namespace e = wire::ev::input_request;
    return InputRequestEvent{JsonString(msg, e::kId), JsonInt(msg, e::kSeq),
                             JsonString(msg, e::kPrompt)};
  }
  if (ev == wire::ev::image::kName) {
    namespace e = wire::ev::image;
    return ImageEvent{JsonString(msg, e::kId), JsonInt(msg, e::kWidth).value_or(0),
                      JsonInt(msg, e::kHeight).value_or(0), JsonString(msg, e::kDataB64)};
  }
  if (ev == wire::ev::file::kName) {
    namespace e = wire::ev::file;
    return FileEvent{JsonString(msg, e::kId),       JsonString(msg, e::kPath),
                     JsonInt(msg, e::kOffset),      JsonBool(msg, e::kLast),
                     JsonString(msg, e::kMimeType), JsonString(msg, e::kDataB64)};
  }
  if (ev == wire::ev::done::kName) {
    namespace e = wire::ev::done;
    DoneEvent done;
    done.id = JsonString(msg, e::kId);
    done.verdict = JsonString(msg, e::kVerdict);
    done.exit_code = JsonInt(msg, e::kExitCode);
    done.signal = JsonInt(msg, e::kSignal);
    done.duration_ms = JsonInt(msg, e::kDurationMs);
    if (auto it = msg.find(e::kValue); it != msg.end() && it->is_string()) {
      done.value = it->get<std::string>();
    }
    if (auto it = msg.find(e::kTraceback); it != msg.end() && it->is_object()) {
      done.traceback = std::move(*it);
    }
    done.output_truncated = JsonBool(msg, e::kOutputTruncated);
    done.files_truncated = JsonBool(msg, e::kFilesTruncated);
    done.images_truncated = JsonBool(msg, e::kImagesTruncated);
    done.session_reset = JsonBool(msg, e::kSessionReset);
    done.detail = JsonString(msg, e::kDetail);
    return done;
  }
  if (ev == wire::ev::pong::kName) return PongEvent{JsonInt(msg, wire::ev::pong::kMemoryBytes)};
  if (ev == wire::ev::reply::kName) {
    namespace e = wire::ev::reply;
    ReplyEvent reply;
    reply.id = JsonString(msg, e::kId);
    reply.ok = JsonBool(msg, e::kOk);
    if (auto it = msg.find(e::kResult); it != msg.end()) reply.result = std::move(*it);
    reply.error = JsonString(msg, e::kError);
    return reply;
  }
  if (ev == wire::ev::session_reset::kName) {
    return SessionResetEvent{JsonString(msg, wire::ev::session_reset::kReason)};
  }
  if (ev == wire::ev::fatal::kName) return FatalEvent{JsonString(msg, wire::ev::fatal::kMessage)};
  return OtherEvent{ev};
}

std::string_view EventName(const HarnessEvent& event) {
  struct Name {
    std::string_view operator()(const InvalidMessage&) const { return ""; }
    std::string_view operator()(const OtherEvent& e) const { return e.ev; }
    std::string_view operator()(const ReadyEvent&) const { return wire::ev::ready::kName; }
    std::string_view operator()(const StartedEvent&) const { return wire::ev::started::kName; }
    std::string_view operator()(const InputRequestEvent&) const {
      return wire::ev::input_request::kName;
    }
    std::string_view operator()(const ImageEvent&) const { return wire::ev::image::kName; }
    std::string_view operator()(const FileEvent&) const { return wire::ev::file::kName; }
    std::string_view operator()(const DoneEvent&) const { return wire::ev::done::kName; }
    std::string_view operator()(const PongEvent&) const { return wire::ev::pong::kName; }
    std::string_view operator()(const ReplyEvent&) const { return wire::ev::reply::kName; }
    std::string_view operator()(const SessionResetEvent&) const {
      return wire::ev::session_reset::kName;
    }
    std::string_view operator()(const FatalEvent&) const { return wire::ev::fatal::kName; }
  };
  return std::visit(Name{}, event);
}

ResumeInfo DecodeResume(const json& result) {
  namespace r = wire::op::resume::result;
  ResumeInfo info;
  if (auto it = result.find(r::kRecord); it != result.end()) info.record = *it;
  if (auto it = result.find(r::kIdleS); it != result.end() && it->is_number()) {
    info.idle_s = it->get<double>();
  }
  info.protocol = static_cast<int>(JsonInt(result, r::kProtocol).value_or(0));
  return info;
}

std::vector<exec::SessionFile> DecodePutFiles(const json& result) {
  return FileEntries(result, wire::op::put_files::result::kFiles);
}

exec::SessionFileList DecodeListFiles(const json& result) {
  namespace r = wire::op::list_files::result;
  exec::SessionFileList out;
  out.truncated = JsonBool(result, r::kTruncated);
  for (auto& entry : FileEntries(result, r::kFiles)) {
    // Checked again here (the zygote checked the session's answer): an entry whose path is
    // not a valid result path is dropped and marked, never passed on.
    if (!ResultPathError(entry.path).empty()) {
      out.truncated = true;
      continue;
    }
    out.files.push_back(std::move(entry));
  }
  return out;
}

Result<exec::OutputFile> DecodeGetFile(const json& result, std::string_view requested_path) {
  namespace r = wire::op::get_file::result;
  auto data = Base64Decode(JsonString(result, r::kDataB64));
  if (!data.ok()) return Error(ErrorCode::kProtocol, "the sandbox sent a file that is not base64");
  exec::OutputFile file;
  file.path = JsonString(result, r::kPath);
  if (file.path.empty()) file.path = requested_path;
  file.mime_type = CheckedMimeType(JsonString(result, r::kMimeType));
  file.data = std::move(*data);
  file.size = static_cast<std::int64_t>(file.data.size());
  return file;
}

Error ReplyError(const ReplyEvent& reply) {
  std::string error = reply.error;
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

}  // namespace sandbox::runner
