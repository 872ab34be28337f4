// The engine's event stream (GET /events): a long-lived answer of newline-delimited JSON objects
// (create, start, oom, die with exitCode, destroy, ...). EventStream is the pull interface (a
// blocking Next() with a deadline); EventWatcher runs one on a thread and hands events to a
// callback. Both stop promptly from another thread: the stream is driven by a curl multi handle
// whose poll curl_multi_wakeup interrupts.
//
// Thread-safety: EventStream: one thread calls Next(); Stop() may be called from any thread; the
// destructor must not run while Next() is running. EventWatcher: Stop() and the destructor may be
// called from any thread except the callback's own.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/core/result.h"
#include "sandbox/docker/deadline.h"
#include "sandbox/docker/query.h"
#include "sandbox/docker/transport.h"

namespace sandbox::docker {

struct Event {
  std::string type;    // "container", "image", "network", ...
  std::string action;  // "create", "start", "die", "oom", "destroy", "exec_start: sh", ...
  std::string actor_id;
  std::map<std::string, std::string> attributes;  // container labels, "name", "image", "exitCode"
  std::int64_t time = 0;                          // seconds since the epoch
  std::int64_t time_nano = 0;
  nlohmann::json raw;

  // attributes["exitCode"] as a number (set on "die").
  std::optional<int> exit_code() const;
};

// Parses one line of the stream. kProtocol when it is not an event object. Pure.
Result<Event> ParseEvent(std::string_view line);

struct EventOptions {
  // E.g. {{"type", {"container"}}, {"label", {"io.sandbox-mcp.managed=true"}},
  //       {"event", {"die", "oom"}}}.
  Filters filters;
  std::optional<std::int64_t> since;  // unix seconds; replays events from then on
  std::optional<std::int64_t> until;  // unix seconds; the stream ends there
};

class EventStream {
 public:
  // The line length above which the stream is considered broken.
  static constexpr std::size_t kMaxLineBytes = std::size_t{1024} * 1024;

  ~EventStream();
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  // The next event, or nullopt when the engine ended the stream (`until` reached). kTimeout at the
  // deadline (the stream stays usable), kCancelled after Stop(), kUnavailable when the
  // connection broke.
  Result<std::optional<Event>> Next(Deadline deadline);

  // Makes a blocked or later Next() return kCancelled promptly. Any thread.
  void Stop();

  // Internal: use Client::Events. Returns once the engine answered the head, i.e. once the
  // subscription is active (events after that are not missed).
  static Result<std::unique_ptr<EventStream>> Open(const Transport& transport,
                                                   const std::string& target,
                                                   Deadline open_deadline);

 private:
  struct State;
  explicit EventStream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class EventWatcher {
 public:
  using OnEvent = std::function<void(const Event&)>;
  // Called once when the stream ends on its own: OkStatus at a clean end (`until`), the error
  // otherwise. Not called after Stop().
  using OnEnd = std::function<void(const Status&)>;

  // Starts a thread reading `stream` and calling `on_event` for each event (on that thread).
  static std::unique_ptr<EventWatcher> Start(std::unique_ptr<EventStream> stream, OnEvent on_event,
                                             OnEnd on_end = nullptr);

  ~EventWatcher();  // Stop()
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  // Stops the stream and joins the thread; returns within milliseconds unless a callback is slow.
  void Stop();

 private:
  struct State;
  explicit EventWatcher(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace sandbox::docker
