#include "sandbox/docker/client.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "sandbox/core/json.h"

namespace sandbox::docker {
namespace {

std::string_view ConditionName(WaitCondition c) {
  switch (c) {
    case WaitCondition::kNextExit:
      return "next-exit";
    case WaitCondition::kNotRunning:
      return "not-running";
    case WaitCondition::kRemoved:
      return "removed";
  }
  return "not-running";
}

}  // namespace

std::string OperationOf(std::string_view target) {
  target = target.substr(0, std::min(target.find('?'), target.size()));
  std::vector<std::string_view> segments;
  while (!target.empty()) {
    if (target.front() == '/') {
      target.remove_prefix(1);
      continue;
    }
    const auto slash = std::min(target.find('/'), target.size());
    segments.push_back(target.substr(0, slash));
    target.remove_prefix(slash);
  }
  if (!segments.empty() && segments.front().size() > 1 && segments.front()[0] == 'v' &&
      segments.front()[1] >= '0' && segments.front()[1] <= '9') {
    segments.erase(segments.begin());
  }
  // Collection verbs that sit where an id would.
  auto verb = [](std::string_view s) {
    return s == "create" || s == "json" || s == "prune" || s == "load" || s == "search" ||
           s == "get";
  };
  std::string out;
  if (!segments.empty() && segments.front() == "images" && segments.size() >= 2 &&
      !verb(segments[1])) {
    // An image name may hold slashes: everything up to the last segment is the name.
    out = "/images/{name}";
    if (segments.size() >= 3) out += "/" + std::string(segments.back());
    return out;
  }
  for (std::size_t i = 0; i < segments.size(); ++i) {
    out += '/';
    const bool id_slot = i == 1 && (segments[0] == "containers" || segments[0] == "exec" ||
                                    segments[0] == "networks" || segments[0] == "volumes");
    out += id_slot && !verb(segments[i]) ? std::string_view("{id}") : segments[i];
  }
  return out.empty() ? "/" : out;
}

Client::Client(ClientOptions options, std::unique_ptr<Transport> transport, ApiVersion version)
    : options_(std::move(options)), transport_(std::move(transport)), version_(version) {}

Result<std::unique_ptr<Client>> Client::Connect(const CurlGlobal& curl, ClientOptions options,
                                                const CallOptions& call) {
  auto transport = Transport::Create(curl, options.transport);
  if (!transport.ok()) return transport.error();
  // Negotiate with a provisional client whose version is not used by Ping (/_ping is unversioned).
  std::unique_ptr<Client> client(
      new Client(std::move(options), std::move(*transport), kMinApiVersion));
  auto ping = client->Ping(call);
  if (!ping.ok()) return ping.error();
  auto version = NegotiateApiVersion(ping->api_version, client->options_.max_api_version);
  if (!version.ok()) return version.error();
  client->version_ = *version;
  // The ping does not tell the engine's minimum; /version does (unversioned path: any engine).
  auto engine = client->CallJson("GET", "/version", "", "engine version", call);
  if (!engine.ok()) return engine.error();
  auto info = ParseVersion(*engine);
  if (!info.ok()) return info.error();
  SANDBOX_RETURN_IF_ERROR(CheckEngineMinimum(*version, info->min_api_version));
  return client;
}

std::string Client::Versioned(std::string_view path) const {
  return "/v" + version_.ToString() + std::string(path);
}

Deadline Client::DeadlineOf(const CallOptions& call) const {
  return call.Resolve(options_.call_timeout);
}

Result<HttpResponse> Client::Call(std::string method, std::string target, std::string body,
                                  std::string_view what, const CallOptions& call,
                                  std::size_t max_bytes, std::vector<long> also_ok) const {
  HttpRequest req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.body = std::move(body);
  if (!req.body.empty()) {
    req.content_type = req.method == "PUT" ? "application/x-tar" : "application/json";
  }
  req.deadline = DeadlineOf(call);
  req.max_response_bytes = max_bytes != 0 ? max_bytes : options_.max_response_bytes;
  const auto begin = std::chrono::steady_clock::now();
  auto resp = transport_->Perform(req);
  if (options_.on_call) {
    options_.on_call(EngineCall{req.method + " " + OperationOf(req.target),
                                resp.ok() ? resp->status : 0,
                                std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - begin)});
  }
  if (!resp.ok()) return resp.error().WithContext(what);
  bool ok = (resp->status >= 200 && resp->status < 300) ||
            std::find(also_ok.begin(), also_ok.end(), resp->status) != also_ok.end();
  if (!ok) return ErrorFromResponse(resp->status, resp->body, what);
  return resp;
}

Result<nlohmann::json> Client::CallJson(std::string method, std::string target, std::string body,
                                        std::string_view what, const CallOptions& call) const {
  auto resp = Call(std::move(method), std::move(target), std::move(body), what, call);
  if (!resp.ok()) return resp.error();
  auto j = ParseJson(resp->body);
  if (!j.ok()) {
    return Error(ErrorCode::kProtocol, std::string(what) +
                                           ": the Docker engine's answer is not usable JSON (" +
                                           j.error().message() + ")");
  }
  return std::move(j).value();
}

// ---- system ----

Result<PingInfo> Client::Ping(const CallOptions& call) const {
  auto resp = Call("GET", "/_ping", "", "ping Docker engine", call);
  if (!resp.ok()) return resp.error();
  return PingInfo{resp->Header("Api-Version"), resp->Header("Ostype")};
}

Result<VersionInfo> Client::Version(const CallOptions& call) const {
  auto j = CallJson("GET", Versioned("/version"), "", "engine version", call);
  if (!j.ok()) return j.error();
  return ParseVersion(*j);
}

Result<SystemInfo> Client::Info(const CallOptions& call) const {
  auto j = CallJson("GET", Versioned("/info"), "", "engine info", call);
  if (!j.ok()) return j.error();
  return ParseInfo(*j);
}

// ---- images ----

Result<ImageInfo> Client::InspectImage(std::string_view image, const CallOptions& call) const {
  auto j = CallJson("GET", Versioned("/images/" + ImagePath(image) + "/json"), "",
                    "inspect image " + std::string(image), call);
  if (!j.ok()) return j.error();
  return ParseImageInspect(*j);
}

// ---- containers ----

Result<CreatedContainer> Client::CreateContainer(const ContainerSpec& spec,
                                                 const CallOptions& call) const {
  Query q;
  if (!spec.name.empty()) q.Add("name", spec.name);
  auto j =
      CallJson("POST", Versioned("/containers/create" + q.Encode()), BuildCreateBody(spec).dump(),
               "create container from image " + spec.image, call);
  if (!j.ok()) return j.error();
  return ParseCreated(*j);
}

Status Client::StartContainer(std::string_view id, const CallOptions& call) const {
  auto resp = Call("POST", Versioned("/containers/" + PathSegment(id) + "/start"), "",
                   "start container " + std::string(id), call, 0, {304});
  if (!resp.ok()) return resp.error();
  return OkStatus();
}

Result<WaitResult> Client::WaitContainer(std::string_view id, WaitCondition condition,
                                         const CallOptions& call) const {
  std::string target = Versioned("/containers/" + PathSegment(id) + "/wait" +
                                 Query().Add("condition", ConditionName(condition)).Encode());
  auto j = CallJson("POST", std::move(target), "", "wait for container " + std::string(id), call);
  if (!j.ok()) return j.error();
  return ParseWait(*j);
}

Status Client::KillContainer(std::string_view id, std::string_view signal,
                             const CallOptions& call) const {
  auto resp = Call("POST",
                   Versioned("/containers/" + PathSegment(id) + "/kill" +
                             Query().Add("signal", signal).Encode()),
                   "", "kill container " + std::string(id), call);
  if (!resp.ok()) return resp.error();
  return OkStatus();
}

Status Client::UpdateContainer(std::string_view id, const ResourceUpdate& update,
                               const CallOptions& call) const {
  nlohmann::json body = nlohmann::json::object();
  if (update.memory_bytes > 0) {
    body["Memory"] = update.memory_bytes;
    body["MemorySwap"] = update.memory_bytes;
  }
  if (update.pids_limit > 0) body["PidsLimit"] = update.pids_limit;
  auto resp = Call("POST", Versioned("/containers/" + PathSegment(id) + "/update"), body.dump(),
                   "update container " + std::string(id), call);
  if (!resp.ok()) return resp.error();
  return OkStatus();
}

Status Client::RemoveContainer(std::string_view id, const RemoveOptions& options,
                               const CallOptions& call) const {
  auto resp =
      Call("DELETE",
           Versioned("/containers/" + PathSegment(id) +
                     Query().Add("force", options.force).Add("v", options.volumes).Encode()),
           "", "remove container " + std::string(id), call);
  if (!resp.ok()) return resp.error();
  return OkStatus();
}

Result<ContainerInfo> Client::InspectContainer(std::string_view id, const CallOptions& call) const {
  auto j = CallJson("GET", Versioned("/containers/" + PathSegment(id) + "/json"), "",
                    "inspect container " + std::string(id), call);
  if (!j.ok()) return j.error();
  return ParseContainerInspect(*j);
}

Result<std::vector<ContainerSummary>> Client::ListContainers(const ListOptions& options,
                                                             const CallOptions& call) const {
  auto j = CallJson("GET",
                    Versioned("/containers/json" +
                              Query().Add("all", options.all).AddFilters(options.filters).Encode()),
                    "", "list containers", call);
  if (!j.ok()) return j.error();
  return ParseContainerList(*j);
}

// ---- archives ----

Result<ArchiveData> Client::GetArchive(std::string_view id, std::string_view path,
                                       const CallOptions& call) const {
  std::string what = "get " + std::string(path) + " from container " + std::string(id);
  auto resp = Call(
      "GET",
      Versioned("/containers/" + PathSegment(id) + "/archive" + Query().Add("path", path).Encode()),
      "", what, call, options_.max_archive_bytes);
  if (!resp.ok()) return resp.error();
  ArchiveData out;
  std::string header = resp->Header("X-Docker-Container-Path-Stat");
  if (!header.empty()) {
    auto st = ParsePathStatHeader(header);
    if (!st.ok()) return st.error().WithContext(what);
    out.stat = std::move(*st);
  }
  out.tar = std::move(resp->body);
  return out;
}

Result<PathStat> Client::StatPath(std::string_view id, std::string_view path,
                                  const CallOptions& call) const {
  std::string what = "stat " + std::string(path) + " in container " + std::string(id);
  auto resp = Call(
      "HEAD",
      Versioned("/containers/" + PathSegment(id) + "/archive" + Query().Add("path", path).Encode()),
      "", what, call);
  if (!resp.ok()) {
    // A HEAD answer has no body, so the engine's message is lost; say what was missing.
    if (resp.error().code() == ErrorCode::kNotFound) {
      return Error(ErrorCode::kNotFound, what + ": no such container or path", 404);
    }
    return resp.error();
  }
  std::string header = resp->Header("X-Docker-Container-Path-Stat");
  if (header.empty()) {
    return Error(ErrorCode::kProtocol, what + ": the engine sent no path stat header");
  }
  auto st = ParsePathStatHeader(header);
  if (!st.ok()) return st.error().WithContext(what);
  return st;
}

Status Client::PutArchive(std::string_view id, std::string_view dir, std::string_view tar,
                          const CallOptions& call) const {
  auto resp = Call(
      "PUT",
      Versioned("/containers/" + PathSegment(id) + "/archive" + Query().Add("path", dir).Encode()),
      std::string(tar), "put archive into " + std::string(dir) + " of container " + std::string(id),
      call);
  if (!resp.ok()) return resp.error();
  return OkStatus();
}

// ---- streams ----

Result<std::unique_ptr<AttachedStream>> Client::Attach(std::string_view id,
                                                       const AttachOptions& options,
                                                       const CallOptions& call) const {
  Query q;
  q.Add("stream", true)
      .Add("stdin", options.attach_stdin)
      .Add("stdout", options.attach_stdout)
      .Add("stderr", options.attach_stderr);
  if (options.logs) q.Add("logs", true);
  const auto begin = std::chrono::steady_clock::now();
  auto stream = AttachedStream::Open(
      *transport_, Versioned("/containers/" + PathSegment(id) + "/attach" + q.Encode()), options,
      DeadlineOf(call));
  if (options_.on_call) {
    // The upgrade's status (101) is the stream's; a failed attach reports its engine status.
    const long status = stream.ok() ? 101 : stream.error().http_status();
    options_.on_call(EngineCall{"POST /containers/{id}/attach", status,
                                std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - begin)});
  }
  return stream;
}

Result<std::unique_ptr<EventStream>> Client::Events(const EventOptions& options,
                                                    const CallOptions& call) const {
  Query q;
  if (options.since) q.Add("since", std::to_string(*options.since));
  if (options.until) q.Add("until", std::to_string(*options.until));
  q.AddFilters(options.filters);
  return EventStream::Open(*transport_, Versioned("/events" + q.Encode()), DeadlineOf(call));
}

}  // namespace sandbox::docker
