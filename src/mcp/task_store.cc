#include "sandbox/mcp/task_store.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "sandbox/core/human_bytes.h"
#include "sandbox/core/log_safe.h"
#include "sandbox/core/random_id.h"
#include "sandbox/core/replica_id.h"
#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::system_clock;
namespace rpc_code = jsonrpc::rpc_code;

// ISO 8601 in UTC with milliseconds, e.g. 2026-12-05T07:30:00.123Z.
std::string Iso8601(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(ms.count() / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", text, static_cast<int>(ms.count() % 1000));
  return out;
}

std::int64_t Millis(std::chrono::milliseconds d) { return d.count(); }

// Counts what a serializer writes, so a result's size is known without a copy of its text.
class CountingOutput final : public nlohmann::detail::output_adapter_protocol<char> {
 public:
  void write_character(char /*c*/) override { ++count; }
  void write_characters(const char* /*s*/, std::size_t length) override { count += length; }
  std::size_t count = 0;
};

// The size of DumpJson(value) (compact, invalid UTF-8 replaced), without building it.
std::int64_t DumpedSize(const json& value) {
  auto out = std::make_shared<CountingOutput>();
  nlohmann::detail::serializer<json> serializer(out, ' ', json::error_handler_t::replace);
  serializer.dump(value, false, false, 0);
  return static_cast<std::int64_t>(out->count);
}

}  // namespace

std::string_view TaskStatusName(TaskStatus status) {
  switch (status) {
    case TaskStatus::kWorking:
      return "working";
    case TaskStatus::kInputRequired:
      return "input_required";
    case TaskStatus::kCompleted:
      return "completed";
    case TaskStatus::kCancelled:
      return "cancelled";
    case TaskStatus::kFailed:
      return "failed";
  }
  return "failed";
}

Task::Task(std::string id, std::string principal, Clock::time_point created, TaskOptions options)
    : id_(std::move(id)),
      principal_(std::move(principal)),
      created_(created),
      options_(std::move(options)),
      updated_(created) {}

void Task::Touch() { updated_ = options_.now ? options_.now() : Clock::now(); }

void Task::AppendOutput(std::string_view text) {
  std::lock_guard lock(mu_);
  output_total_ += text.size();
  const std::size_t bound = options_.live_output_bytes;
  if (text.size() >= bound) {
    // Only the chunk's own tail survives: never let one large chunk grow the buffer's capacity,
    // which erase() would keep for the task's whole life.
    output_.assign(text.substr(text.size() - bound));
  } else {
    output_.append(text);
    if (output_.size() > bound) output_.erase(0, output_.size() - bound);
  }
  if (output_.capacity() > 2 * bound) output_.shrink_to_fit();
}

json Task::AwaitInput(const json& requests, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  if (status_ != TaskStatus::kWorking && status_ != TaskStatus::kInputRequired)
    return json::object();
  for (const auto& [key, request] : requests.items()) {
    if (!answers_.contains(key)) pending_[key] = request;
  }
  if (!pending_.empty()) {
    status_ = TaskStatus::kInputRequired;
    Touch();
  }
  auto answered = [&] {
    for (const auto& [key, request] : requests.items()) {
      if (!answers_.contains(key)) return false;
    }
    return true;
  };
  changed_.wait_for(lock, wait, [&] { return answered() || cancel_.IsCancelled(); });
  json out = json::object();
  for (const auto& [key, request] : requests.items()) {
    if (auto it = answers_.find(key); it != answers_.end()) {
      out[key] = *it;
      answers_.erase(it);
    }
    pending_.erase(key);  // given up on, or answered: never asked again under this key
  }
  if (pending_.empty() && status_ == TaskStatus::kInputRequired) {
    status_ = TaskStatus::kWorking;
    Touch();
  }
  return out;
}

void Task::AskInput(const std::string& key, json request, AnswerCallback on_answer) {
  {
    std::lock_guard lock(mu_);
    const bool open = status_ == TaskStatus::kWorking || status_ == TaskStatus::kInputRequired;
    if (open && !pending_.contains(key) && !answers_.contains(key) && !askers_.contains(key)) {
      pending_[key] = std::move(request);
      askers_[key] = std::move(on_answer);
      status_ = TaskStatus::kInputRequired;
      Touch();
      changed_.notify_all();
      return;
    }
  }
  on_answer(json());
}

std::vector<Task::AnswerCallback> Task::TakeAskersLocked() {
  std::vector<AnswerCallback> out;
  for (auto& [key, callback] : askers_) {
    pending_.erase(key);
    out.push_back(std::move(callback));
  }
  askers_.clear();
  return out;
}

void Task::End(TaskStatus status, json payload) {
  std::vector<AnswerCallback> unanswered;
  {
    std::lock_guard lock(mu_);
    if (status_ == TaskStatus::kCompleted || status_ == TaskStatus::kCancelled ||
        status_ == TaskStatus::kFailed) {
      return;
    }
    unanswered = TakeAskersLocked();
    pending_ = json::object();
    // The live tail shows only while the task works; a kept task holds its result alone (its
    // bytes are what tasks.max_result_bytes counts).
    std::string().swap(output_);
    if (cancel_requested_) {
      status_ = TaskStatus::kCancelled;
    } else {
      status_ = status;
      (status == TaskStatus::kFailed ? error_ : result_) = std::move(payload);
    }
    Touch();
    changed_.notify_all();
  }
  for (auto& callback : unanswered) callback(json());
}

void Task::Finish(json result) { End(TaskStatus::kCompleted, std::move(result)); }

void Task::Fail(json error) { End(TaskStatus::kFailed, std::move(error)); }

void Task::Answer(const json& responses) {
  if (!responses.is_object()) return;
  std::vector<std::pair<AnswerCallback, json>> answered;  // AskInput's, run outside the lock
  {
    std::lock_guard lock(mu_);
    bool any = false;
    for (const auto& [key, response] : responses.items()) {
      if (!pending_.contains(key)) continue;  // unknown or answered already: ignored
      pending_.erase(key);
      any = true;
      if (auto asker = askers_.find(key); asker != askers_.end()) {
        answered.emplace_back(std::move(asker->second), response);
        askers_.erase(asker);
      } else {
        answers_[key] = response;
      }
    }
    if (!any) return;
    if (pending_.empty() && status_ == TaskStatus::kInputRequired) status_ = TaskStatus::kWorking;
    Touch();
    changed_.notify_all();
  }
  for (auto& [callback, response] : answered) callback(response);
}

void Task::RequestCancel() {
  {
    std::lock_guard lock(mu_);
    if (status_ == TaskStatus::kCompleted || status_ == TaskStatus::kCancelled ||
        status_ == TaskStatus::kFailed) {
      return;
    }
    cancel_requested_ = true;
    changed_.notify_all();
  }
  cancel_.Cancel();  // outside the lock: the run's callbacks may call back into the task
}

std::int64_t Task::ResultBytes() const {
  std::lock_guard lock(mu_);
  if (status_ == TaskStatus::kCompleted) return DumpedSize(result_);
  if (status_ == TaskStatus::kFailed) return DumpedSize(error_);
  return 0;
}

void Task::EvictResult(const std::string& reason) {
  std::lock_guard lock(mu_);
  if (status_ != TaskStatus::kCompleted && status_ != TaskStatus::kFailed) return;
  status_ = TaskStatus::kFailed;
  json().swap(result_);  // the memory goes back now
  error_ = {{"code", rpc_code::kServerError}, {"message", reason}, {"data", {{"evicted", true}}}};
  Touch();
}

bool Task::terminal() const {
  std::lock_guard lock(mu_);
  return status_ == TaskStatus::kCompleted || status_ == TaskStatus::kCancelled ||
         status_ == TaskStatus::kFailed;
}

json Task::SummaryLocked() const {
  return {{"taskId", id_},
          {"status", TaskStatusName(status_)},
          {"createdAt", Iso8601(created_)},
          {"lastUpdatedAt", Iso8601(updated_)},
          {"ttlMs", Millis(options_.ttl)},
          {"pollIntervalMs", Millis(options_.poll_interval)}};
}

json Task::Summary() const {
  std::lock_guard lock(mu_);
  return SummaryLocked();
}

json Task::Detailed() const {
  std::lock_guard lock(mu_);
  json out = SummaryLocked();
  switch (status_) {
    case TaskStatus::kInputRequired:
      out["inputRequests"] = pending_;
      out["statusMessage"] = "waiting for the client's answer (tasks/update)";
      break;
    case TaskStatus::kCompleted:
      out["result"] = result_;
      break;
    case TaskStatus::kFailed:
      out["error"] = error_;
      break;
    case TaskStatus::kCancelled:
      out["statusMessage"] = "cancelled by the client";
      break;
    case TaskStatus::kWorking: {
      const auto now = options_.now ? options_.now() : Clock::now();
      const auto running = std::chrono::duration_cast<std::chrono::seconds>(now - created_);
      out["statusMessage"] = "running for " + std::to_string(running.count()) + " s, " +
                             std::to_string(output_total_) + " bytes of output";
      break;
    }
  }
  if (status_ == TaskStatus::kWorking || status_ == TaskStatus::kInputRequired) {
    // A vendor key (MetaObject rules: not under modelcontextprotocol): the output so far, so a
    // client can show a long run's progress without a stream.
    out["_meta"]["dev.sandbox-mcp/output"] = {
        {"text", output_}, {"bytes", output_total_}, {"truncated", output_total_ > output_.size()}};
  }
  return out;
}

TaskStore::TaskStore(TaskOptions options, std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)), logger_(std::move(logger)), runs_(options_.max_running) {}

TaskStore::~TaskStore() { Shutdown(); }

Clock::time_point TaskStore::Now() const { return options_.now ? options_.now() : Clock::now(); }

void TaskStore::SweepLocked(Clock::time_point now) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const bool expired = now - it->second->created_at() > options_.ttl;
    if (expired && it->second->terminal()) {
      const std::string id = (it++)->first;
      EraseLocked(id);
    } else {
      ++it;
    }
  }
}

void TaskStore::EraseLocked(const std::string& id) {
  tasks_.erase(id);
  for (std::size_t i = 0; i < kept_.size(); ++i) {
    if (kept_[i].task->id() != id) continue;
    kept_bytes_ -= kept_[i].bytes;
    auto mine = kept_by_principal_.find(kept_[i].task->principal());
    if (mine != kept_by_principal_.end() && (mine->second -= kept_[i].bytes) <= 0) {
      kept_by_principal_.erase(mine);
    }
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

void TaskStore::EvictLocked(std::size_t index, const std::string& reason) {
  KeptResult victim = std::move(kept_[index]);
  kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(index));
  kept_bytes_ -= victim.bytes;
  auto mine = kept_by_principal_.find(victim.task->principal());
  if (mine != kept_by_principal_.end() && (mine->second -= victim.bytes) <= 0) {
    kept_by_principal_.erase(mine);
  }
  ++evicted_total_;
  victim.task->EvictResult("the task's result (" + HumanBytes(victim.bytes) +
                           ") is no longer kept: " + reason +
                           "; kept results are evicted oldest first");
  logger_->info("task {}: result of {} evicted ({})", victim.task->id(), HumanBytes(victim.bytes),
                reason);
}

void TaskStore::Keep(const std::shared_ptr<Task>& task) {
  const std::int64_t bytes = task->ResultBytes();  // outside the lock: it walks the result
  if (bytes <= 0) return;
  const std::string& principal = task->principal();
  const std::string per_principal = "this token's finished tasks may keep " +
                                    HumanBytes(options_.max_result_bytes_per_principal) +
                                    " of results (tasks.max_result_bytes_per_principal)";
  const std::string server_wide = "the server keeps " + HumanBytes(options_.max_result_bytes) +
                                  " of task results in all (tasks.max_result_bytes)";
  std::lock_guard lock(mu_);
  if (tasks_.find(task->id()) == tasks_.end()) return;  // forgotten already
  if (bytes > options_.max_result_bytes_per_principal) {
    ++evicted_total_;
    task->EvictResult("the task's result (" + HumanBytes(bytes) +
                      ") was not kept: " + per_principal);
    logger_->info("task {}: result of {} not kept (tasks.max_result_bytes_per_principal)",
                  task->id(), HumanBytes(bytes));
    return;
  }
  auto mine = [&] {
    auto it = kept_by_principal_.find(principal);
    return it == kept_by_principal_.end() ? std::int64_t{0} : it->second;
  };
  // The principal's own oldest go first for its bound, anyone's oldest for the server's.
  for (std::size_t i = 0;
       i < kept_.size() && mine() + bytes > options_.max_result_bytes_per_principal;) {
    if (kept_[i].task->principal() == principal) {
      EvictLocked(i, per_principal);
    } else {
      ++i;
    }
  }
  while (!kept_.empty() && kept_bytes_ + bytes > options_.max_result_bytes) {
    EvictLocked(0, server_wide);
  }
  kept_.push_back(KeptResult{task, bytes});
  kept_bytes_ += bytes;
  kept_by_principal_[principal] += bytes;
}

KeptResultStats TaskStore::kept_results() const {
  std::lock_guard lock(mu_);
  return {kept_bytes_, options_.max_result_bytes, evicted_total_};
}

Result<std::shared_ptr<Task>> TaskStore::Start(const std::string& principal,
                                               std::function<void(Task&)> work) {
  std::shared_ptr<Task> task;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return Error(ErrorCode::kLimit, "the server is stopping: no new tasks");
    const auto now = Now();
    SweepLocked(now);
    std::size_t mine = 0;
    std::size_t running = 0;
    std::shared_ptr<Task> oldest_done;
    for (const auto& [id, t] : tasks_) {
      if (t->principal() != principal) continue;
      ++mine;
      if (!t->terminal()) {
        ++running;
      } else if (!oldest_done || t->created_at() < oldest_done->created_at()) {
        oldest_done = t;
      }
    }
    if (running >= options_.max_running_per_principal) {
      return Error(ErrorCode::kLimit,
                   std::to_string(running) +
                       " tasks of this token are running, the most one token may run at once; "
                       "wait for one (tasks/get) or cancel one (tasks/cancel)");
    }
    if (mine >= options_.max_per_principal) {
      if (!oldest_done) {
        return Error(ErrorCode::kLimit, "this token holds " + std::to_string(mine) +
                                            " tasks, the most one token may hold");
      }
      EraseLocked(oldest_done->id());  // the oldest finished one makes room
    }
    task = std::make_shared<Task>(ReplicaId(options_.replica, RandomHexId(16)), principal, now,
                                  options_);
    tasks_.emplace(task->id(), task);
  }
  // Inserted before the run starts: tasks/get finds it the moment the client has its id.
  bool spawned = runs_.Spawn([this, task, work = std::move(work), logger = logger_] {
    try {
      work(*task);
    } catch (const std::exception& e) {
      logger->error("task {}: {}", task->id(), LogEscape(e.what(), 1024));
      task->Fail({{"code", rpc_code::kInternalError}, {"message", e.what()}});
    }
    // Whatever the work did, the task ends with its run.
    task->Fail(
        {{"code", rpc_code::kInternalError}, {"message", "the task's run ended without a result"}});
    Keep(task);  // the store outlives its runs (Shutdown waits for them)
  });
  if (!spawned) {
    std::lock_guard lock(mu_);
    tasks_.erase(task->id());
    return Error(ErrorCode::kLimit, std::to_string(options_.max_running) +
                                        " tasks are running, the most this server runs at once; "
                                        "retry later");
  }
  return task;
}

std::shared_ptr<Task> TaskStore::Find(const std::string& principal, const std::string& id) {
  std::lock_guard lock(mu_);
  SweepLocked(Now());
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second->principal() != principal) return nullptr;
  return it->second;
}

void TaskStore::Shutdown() {
  std::map<std::string, std::shared_ptr<Task>> tasks;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    tasks = tasks_;
  }
  for (auto& [id, task] : tasks) task->RequestCancel();
  runs_.Wait();
}

std::size_t TaskStore::size() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

}  // namespace sandbox::mcp
