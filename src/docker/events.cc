#include "sandbox/docker/events.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <thread>

#include "docker/curl_util.h"
#include "sandbox/core/json.h"

namespace sandbox::docker {
namespace {

// Above this much unread data the transfer is paused until Next() catches up.
constexpr std::size_t kPauseAboveBytes = std::size_t{8} * 1024 * 1024;
// Longest single wait inside Next/Open; Stop() interrupts it anyway.
constexpr long kMaxPollMs = 1000;

// A member of the type the engine documents; any other type counts as absent (json's value()
// would throw a type error out of the watcher's thread, ending the process).
std::string StringMember(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t IntegerMember(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() ? sandbox::JsonInteger(*it).value_or(0) : 0;
}

}  // namespace

std::optional<int> Event::exit_code() const {
  auto it = attributes.find("exitCode");
  if (it == attributes.end()) return std::nullopt;
  int code = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), code);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return code;
}

Result<Event> ParseEvent(std::string_view line) {
  auto parsed = ParseJson(line);
  if (!parsed.ok() || !parsed->is_object()) {
    return Error(ErrorCode::kProtocol,
                 "Docker event is not a JSON object: " + std::string(line.substr(0, 200)));
  }
  const nlohmann::json& j = *parsed;
  Event e;
  e.type = StringMember(j, "Type");
  e.action = StringMember(j, "Action");
  if (e.action.empty()) e.action = StringMember(j, "status");  // engines before API 1.22
  auto actor = j.find("Actor");
  if (actor != j.end() && actor->is_object()) {
    e.actor_id = StringMember(*actor, "ID");
    auto attrs = actor->find("Attributes");
    if (attrs != actor->end() && attrs->is_object()) {
      for (auto it = attrs->begin(); it != attrs->end(); ++it) {
        if (it->is_string()) e.attributes[it.key()] = it->get<std::string>();
      }
    }
  }
  if (e.actor_id.empty()) e.actor_id = StringMember(j, "id");
  e.time = IntegerMember(j, "time");
  e.time_nano = IntegerMember(j, "timeNano");
  e.raw = std::move(parsed).value();
  if (e.action.empty()) {
    return Error(ErrorCode::kProtocol, "Docker event without an Action: " + e.raw.dump());
  }
  return e;
}

// ---- EventStream ----

struct EventStream::State {
  internal::CurlMultiPtr multi;
  internal::CurlEasyPtr easy;
  Endpoint endpoint;
  std::string what;
  char errbuf[CURL_ERROR_SIZE] = {};
  std::atomic<bool> stopped{false};

  // Filled by libcurl callbacks on the thread that drives the transfer.
  std::string buffer;
  long status = 0;
  bool head_done = false;
  bool paused = false;
  bool done = false;
  CURLcode result = CURLE_OK;

  ~State() {
    if (multi && easy) curl_multi_remove_handle(multi.get(), easy.get());
    easy.reset();
    multi.reset();
  }

  static size_t OnHeader(char* data, size_t size, size_t count, void* user) {
    auto* s = static_cast<State*>(user);
    std::string_view line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
      auto sp = line.find(' ');
      s->status = sp == std::string_view::npos ? 0 : std::strtol(line.data() + sp + 1, nullptr, 10);
    } else if ((line == "\r\n" || line == "\n") && s->status >= 200) {
      s->head_done = true;
    }
    return size * count;
  }

  static size_t OnBody(char* data, size_t size, size_t count, void* user) {
    auto* s = static_cast<State*>(user);
    if (s->buffer.size() > kPauseAboveBytes) {
      s->paused = true;
      return CURL_WRITEFUNC_PAUSE;  // libcurl keeps this data and delivers it after unpausing
    }
    s->buffer.append(data, size * count);
    return size * count;
  }

  // Runs the transfer for at most `wait_ms`, returning early when data arrives or on Stop().
  Status Drive(long wait_ms) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi.get(), &running);
    if (mc != CURLM_OK) {
      return Error(ErrorCode::kInternal,
                   std::string("curl_multi_perform: ") + curl_multi_strerror(mc));
    }
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left)) {
      if (msg->msg == CURLMSG_DONE) {
        done = true;
        result = msg->data.result;
      }
    }
    if (done || stopped.load()) return OkStatus();
    mc = curl_multi_poll(multi.get(), nullptr, 0, static_cast<int>(wait_ms), nullptr);
    if (mc != CURLM_OK) {
      return Error(ErrorCode::kInternal,
                   std::string("curl_multi_poll: ") + curl_multi_strerror(mc));
    }
    return OkStatus();
  }
};

EventStream::EventStream(std::unique_ptr<State> state) : state_(std::move(state)) {}

EventStream::~EventStream() = default;

void EventStream::Stop() {
  state_->stopped.store(true);
  curl_multi_wakeup(state_->multi.get());  // documented as callable from any thread
}

Result<std::unique_ptr<EventStream>> EventStream::Open(const Transport& transport,
                                                       const std::string& target,
                                                       Deadline open_deadline) {
  auto s = std::make_unique<State>();
  s->endpoint = transport.endpoint();
  s->what = "GET " + target;
  s->multi.reset(curl_multi_init());
  s->easy.reset(curl_easy_init());
  if (!s->multi || !s->easy) return Error(ErrorCode::kInternal, "libcurl handle allocation failed");
  CURL* h = s->easy.get();
  SANDBOX_RETURN_IF_ERROR(
      internal::ConfigureHandle(h, s->endpoint, transport.options(), target, open_deadline));
  // No CURLOPT_TIMEOUT: the answer lasts as long as the subscription.
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, s->errbuf);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &State::OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, s.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &State::OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, s.get());
  CURLMcode mc = curl_multi_add_handle(s->multi.get(), h);
  if (mc != CURLM_OK) {
    return Error(ErrorCode::kInternal,
                 std::string("curl_multi_add_handle: ") + curl_multi_strerror(mc));
  }
  // The engine flushes the head as soon as the subscription is registered.
  while (!s->head_done && !s->done) {
    if (Remaining(open_deadline).count() == 0) {
      return Error(ErrorCode::kTimeout, s->what + ": no answer from the Docker engine in time");
    }
    SANDBOX_RETURN_IF_ERROR(
        s->Drive(std::min<long>(kMaxPollMs, internal::TimeoutMs(open_deadline))));
  }
  if (s->done && !s->head_done) {
    if (s->result != CURLE_OK)
      return internal::CurlError(s->result, s->errbuf, s->what, s->endpoint);
  }
  if (s->status != 200) {
    while (!s->done && Remaining(open_deadline).count() > 0 && s->buffer.size() < 65536) {
      SANDBOX_RETURN_IF_ERROR(
          s->Drive(std::min<long>(kMaxPollMs, internal::TimeoutMs(open_deadline))));
    }
    return ErrorFromResponse(s->status, s->buffer, "subscribe to events");
  }
  return std::unique_ptr<EventStream>(new EventStream(std::move(s)));
}

Result<std::optional<Event>> EventStream::Next(Deadline deadline) {
  State& s = *state_;
  for (;;) {
    if (s.stopped.load()) return Error(ErrorCode::kCancelled, "event stream was stopped");
    auto nl = s.buffer.find('\n');
    if (nl != std::string::npos) {
      std::string line = s.buffer.substr(0, nl);
      s.buffer.erase(0, nl + 1);
      if (s.paused && s.buffer.size() <= kPauseAboveBytes / 2) {
        s.paused = false;
        curl_easy_pause(s.easy.get(), CURLPAUSE_CONT);
      }
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      auto event = ParseEvent(line);
      if (!event.ok()) return event.error();
      return std::optional<Event>(std::move(*event));
    }
    if (s.buffer.size() > kMaxLineBytes) {
      return Error(ErrorCode::kProtocol, s.what + ": event line longer than the limit");
    }
    if (s.done) {
      if (s.result != CURLE_OK) return internal::CurlError(s.result, s.errbuf, s.what, s.endpoint);
      return std::optional<Event>();
    }
    if (Remaining(deadline).count() == 0) {
      return Error(ErrorCode::kTimeout, s.what + ": no event before the deadline");
    }
    SANDBOX_RETURN_IF_ERROR(s.Drive(std::min<long>(kMaxPollMs, internal::TimeoutMs(deadline))));
  }
}

// ---- EventWatcher ----

struct EventWatcher::State {
  std::unique_ptr<EventStream> stream;
  OnEvent on_event;
  OnEnd on_end;
  std::atomic<bool> stopping{false};
  std::mutex join_mu;
  std::thread thread;

  void Run() {
    for (;;) {
      auto next = stream->Next(DeadlineAfter(std::chrono::hours(24)));
      if (stopping.load()) return;
      if (!next.ok()) {
        if (next.error().code() == ErrorCode::kTimeout) continue;
        if (on_end) on_end(next.error());
        return;
      }
      if (!next->has_value()) {
        if (on_end) on_end(OkStatus());
        return;
      }
      if (on_event) on_event(**next);
    }
  }
};

EventWatcher::EventWatcher(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<EventWatcher> EventWatcher::Start(std::unique_ptr<EventStream> stream,
                                                  OnEvent on_event, OnEnd on_end) {
  auto s = std::make_unique<State>();
  s->stream = std::move(stream);
  s->on_event = std::move(on_event);
  s->on_end = std::move(on_end);
  State* raw = s.get();
  s->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<EventWatcher>(new EventWatcher(std::move(s)));
}

void EventWatcher::Stop() {
  state_->stopping.store(true);
  state_->stream->Stop();
  std::lock_guard<std::mutex> lock(state_->join_mu);
  if (state_->thread.joinable()) state_->thread.join();
}

EventWatcher::~EventWatcher() { Stop(); }

}  // namespace sandbox::docker
