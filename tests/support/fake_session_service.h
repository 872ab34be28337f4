// FakeSessionService: an in-memory exec::SessionService for protocol tests (MCP tools and
// resources, the HTTP API), without Docker. It keeps the interface's contract where a protocol
// layer can observe it:
//   - sessions belong to the principal that created them; any other principal gets kNotFound;
//   - ids are 32 lower-case hex characters; List is oldest first; files are sorted by path;
//   - Create refuses unknown pools and memory above `max_memory_bytes` (kInvalidArgument), and
//     more than `max_total` / `max_per_principal` sessions (kLimit);
//   - Run refuses request.limits.memory_bytes and a foreign pool (kInvalidArgument), writes
//     request.files first, and after a result with session_reset empties the session;
//   - PutFiles refuses absolute paths and ".." (kInvalidArgument) and files above
//     `max_file_bytes` (kLimit); GetFile refuses files above it too (kLimit).
// Tests script runs with `run_script`, mark a session busy (every call on it is kBusy), or make
// the next call fail with FailNext().
// Thread-safety: every method may be called from many threads; set the options and scripts
// before the calls.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sandbox/exec/session_service.h"

namespace sandbox::testing {

class FakeSessionService final : public exec::SessionService {
 public:
  struct Options {
    int max_total = 16;
    int max_per_principal = 4;
    std::int64_t max_file_bytes = 1 << 20;
    std::int64_t max_memory_bytes = 2LL << 30;
    std::int64_t memory_bytes = 512LL << 20;
    double timeout_s = 30;
    std::int64_t output_bytes = 1 << 20;
    std::set<std::string> pools = {"default", "big"};
  };
  // Plays the engine for one run; files the result lists are also stored in the session.
  using RunScript =
      std::function<Result<exec::RunResult>(const std::string& session_id, const exec::RunRequest&,
                                            exec::RunObserver&, const exec::CancelToken&)>;

  FakeSessionService() = default;
  explicit FakeSessionService(Options options) : options_(std::move(options)) {}

  RunScript run_script;

  // The next call of any method fails with `error`.
  void FailNext(Error error) {
    std::lock_guard lock(mu_);
    fail_next_ = std::move(error);
  }
  void SetBusy(const std::string& id, bool busy) {
    std::lock_guard lock(mu_);
    if (auto it = sessions_.find(id); it != sessions_.end()) it->second.busy = busy;
  }
  // Stores a file directly (bypassing size checks), as code running in the session would.
  void AddFile(const std::string& id, const std::string& path, std::string data,
               std::string mime = "") {
    std::lock_guard lock(mu_);
    if (auto it = sessions_.find(id); it != sessions_.end()) {
      it->second.files[path] = {std::move(data), mime.empty() ? MimeOf(path) : std::move(mime)};
    }
  }
  // "Method principal session" for every call, in order.
  std::vector<std::string> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::vector<exec::RunRequest> runs() const {
    std::lock_guard lock(mu_);
    return runs_;
  }
  std::optional<exec::SessionCreateRequest> last_create() const {
    std::lock_guard lock(mu_);
    return last_create_;
  }
  std::size_t session_count() const {
    std::lock_guard lock(mu_);
    return sessions_.size();
  }

  static std::string MimeOf(const std::string& path) {
    auto ends = [&](const char* ext) {
      const std::string e(ext);
      return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
    };
    if (ends(".csv")) return "text/csv";
    if (ends(".txt")) return "text/plain";
    if (ends(".json")) return "application/json";
    if (ends(".png")) return "image/png";
    if (ends(".jpg") || ends(".jpeg")) return "image/jpeg";
    return "application/octet-stream";
  }

  Result<exec::SessionInfo> Create(const std::string& principal,
                                   const exec::SessionCreateRequest& request) override {
    std::lock_guard lock(mu_);
    Record("Create", principal, "");
    last_create_ = request;
    if (auto e = TakeFailure()) return *e;
    const std::string pool = request.pool.empty() ? "default" : request.pool;
    if (options_.pools.count(pool) == 0) {
      return Error(ErrorCode::kInvalidArgument, "unknown pool \"" + pool + "\"");
    }
    if (request.limits.memory_bytes && *request.limits.memory_bytes > options_.max_memory_bytes) {
      return Error(ErrorCode::kInvalidArgument,
                   "memory_bytes: must be at most " + std::to_string(options_.max_memory_bytes));
    }
    if (static_cast<int>(sessions_.size()) >= options_.max_total) {
      return Error(
          ErrorCode::kLimit,
          "the server's limit of " + std::to_string(options_.max_total) + " sessions is reached");
    }
    int mine = 0;
    for (const auto& [id, s] : sessions_) mine += s.principal == principal ? 1 : 0;
    if (mine >= options_.max_per_principal) {
      return Error(ErrorCode::kLimit, "your limit of " +
                                          std::to_string(options_.max_per_principal) +
                                          " sessions is reached; close one with session_close");
    }
    char id[40];
    std::snprintf(id, sizeof id, "%032llx", static_cast<unsigned long long>(++minted_));
    Session session;
    session.principal = principal;
    session.info.id = id;
    session.info.pool = pool;
    session.info.created_unix_ms = 1767225600000 + static_cast<std::int64_t>(minted_);
    session.info.expires_in_ms = 900000;
    session.info.memory_bytes = 75LL << 20;
    session.info.memory_limit_bytes = request.limits.memory_bytes.value_or(options_.memory_bytes);
    session.info.timeout_s = request.limits.timeout_s.value_or(options_.timeout_s);
    session.info.output_bytes = request.limits.output_bytes.value_or(options_.output_bytes);
    session.order = minted_;
    sessions_[id] = session;
    return session.info;
  }

  Result<std::vector<exec::SessionInfo>> List(const std::string& principal) override {
    std::lock_guard lock(mu_);
    Record("List", principal, "");
    if (auto e = TakeFailure()) return *e;
    std::vector<const Session*> mine;
    for (const auto& [id, s] : sessions_) {
      if (s.principal == principal) mine.push_back(&s);
    }
    std::sort(mine.begin(), mine.end(),
              [](const Session* a, const Session* b) { return a->order < b->order; });
    std::vector<exec::SessionInfo> out;
    for (const Session* s : mine) out.push_back(Snapshot(*s));
    return out;
  }

  Result<exec::SessionInfo> Get(const std::string& principal, const std::string& id) override {
    std::lock_guard lock(mu_);
    Record("Get", principal, id);
    if (auto e = TakeFailure()) return *e;
    auto found = Find(principal, id);
    if (!found.ok()) return found.error();
    return Snapshot(**found);
  }

  Status Close(const std::string& principal, const std::string& id) override {
    std::lock_guard lock(mu_);
    Record("Close", principal, id);
    if (auto e = TakeFailure()) return *e;
    auto found = Find(principal, id);
    if (!found.ok()) return found.error();
    sessions_.erase(id);
    return OkStatus();
  }

  Result<exec::RunResult> Run(const std::string& principal, const std::string& id,
                              const exec::RunRequest& request, exec::RunObserver& observer,
                              const exec::CancelToken& cancel) override {
    {
      std::lock_guard lock(mu_);
      Record("Run", principal, id);
      runs_.push_back(request);
      if (auto e = TakeFailure()) return *e;
      auto found = Use(principal, id);
      if (!found.ok()) return found.error();
      Session& s = **found;
      if (request.limits.memory_bytes) {
        return Error(ErrorCode::kInvalidArgument,
                     "memory_bytes: fixed when the session is created");
      }
      if (!request.pool.empty() && request.pool != s.info.pool) {
        return Error(ErrorCode::kInvalidArgument, "pool: the session runs in pool " + s.info.pool);
      }
      for (const auto& file : request.files) s.files[file.path] = {file.content, MimeOf(file.path)};
      s.info.busy = true;
    }
    Result<exec::RunResult> result = Error(ErrorCode::kInternal, "no run");
    if (run_script) {
      result = run_script(id, request, observer, cancel);
    } else {
      observer.OnStarted();
      observer.OnOutput(exec::Stream::kStdout, "ran in " + id + "\n");
      exec::RunResult ok;
      ok.verdict = exec::Verdict::kOk;
      ok.exit_code = 0;
      ok.stdout_text = "ran in " + id + "\n";
      ok.duration_ms = 3;
      result = ok;
    }
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return result;
    Session& s = it->second;
    s.info.busy = false;
    ++s.info.runs;
    if (result.ok()) {
      result->pool = s.info.pool;
      result->session_id = id;
      if (result->session_reset) {
        s.files.clear();
        ++s.info.restarts;
      }
      for (const auto& file : result->files) s.files[file.path] = {file.data, file.mime_type};
    }
    return result;
  }

  Result<std::vector<exec::SessionFile>> PutFiles(
      const std::string& principal, const std::string& id,
      const std::vector<exec::InputFile>& files) override {
    std::lock_guard lock(mu_);
    Record("PutFiles", principal, id);
    if (auto e = TakeFailure()) return *e;
    auto found = Use(principal, id);
    if (!found.ok()) return found.error();
    std::vector<exec::SessionFile> written;
    for (const auto& file : files) {
      if (file.path.empty() || file.path[0] == '/' || file.path.find("..") != std::string::npos) {
        return Error(ErrorCode::kInvalidArgument,
                     "path: must be relative and stay in the working directory");
      }
      if (static_cast<std::int64_t>(file.content.size()) > options_.max_file_bytes) {
        return Error(ErrorCode::kLimit, file.path + " is " + std::to_string(file.content.size()) +
                                            " bytes, above the limit of " +
                                            std::to_string(options_.max_file_bytes));
      }
    }
    for (const auto& file : files) {
      (*found)->files[file.path] = {file.content, MimeOf(file.path)};
      written.push_back(FileInfo(file.path, (*found)->files[file.path]));
    }
    return written;
  }

  Result<exec::SessionFileList> ListFiles(const std::string& principal,
                                          const std::string& id) override {
    std::lock_guard lock(mu_);
    Record("ListFiles", principal, id);
    if (auto e = TakeFailure()) return *e;
    auto found = Use(principal, id);
    if (!found.ok()) return found.error();
    exec::SessionFileList list;
    for (const auto& [path, file] : (*found)->files) list.files.push_back(FileInfo(path, file));
    return list;
  }

  Result<exec::OutputFile> GetFile(const std::string& principal, const std::string& id,
                                   const std::string& path) override {
    std::lock_guard lock(mu_);
    Record("GetFile", principal, id);
    if (auto e = TakeFailure()) return *e;
    auto found = Use(principal, id);
    if (!found.ok()) return found.error();
    auto it = (*found)->files.find(path);
    if (it == (*found)->files.end()) {
      return Error(ErrorCode::kNotFound, "no file " + path + " in session " + id);
    }
    const auto size = static_cast<std::int64_t>(it->second.data.size());
    if (size > options_.max_file_bytes) {
      return Error(ErrorCode::kLimit, path + " is " + std::to_string(size) +
                                          " bytes, above the download limit of " +
                                          std::to_string(options_.max_file_bytes));
    }
    return exec::OutputFile{path, size, it->second.mime, it->second.data};
  }

  Status DeleteFile(const std::string& principal, const std::string& id,
                    const std::string& path) override {
    std::lock_guard lock(mu_);
    Record("DeleteFile", principal, id);
    if (auto e = TakeFailure()) return *e;
    auto found = Use(principal, id);
    if (!found.ok()) return found.error();
    if ((*found)->files.erase(path) == 0) {
      return Error(ErrorCode::kNotFound, "no file " + path + " in session " + id);
    }
    return OkStatus();
  }

 private:
  struct File {
    std::string data;
    std::string mime;
  };
  struct Session {
    std::string principal;
    exec::SessionInfo info;
    std::map<std::string, File> files;
    bool busy = false;  // set by the test: every call is kBusy
    unsigned long long order = 0;
  };

  void Record(const char* method, const std::string& principal, const std::string& id) {
    calls_.push_back(std::string(method) + " " + principal + " " + id);
  }
  std::optional<Error> TakeFailure() {
    std::optional<Error> e;
    e.swap(fail_next_);
    return e;
  }
  Result<Session*> Find(const std::string& principal, const std::string& id) {
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.principal != principal) {
      return Error(ErrorCode::kNotFound,
                   "session " + id +
                       " not found (closed, expired after its idle timeout or "
                       "lifetime, or never created)");
    }
    return &it->second;
  }
  // Find, and kBusy for a session the test marked busy.
  Result<Session*> Use(const std::string& principal, const std::string& id) {
    auto found = Find(principal, id);
    if (found.ok() && (*found)->busy) {
      return Error(ErrorCode::kBusy, "session " + id + " is busy with another call");
    }
    return found;
  }
  static exec::SessionInfo Snapshot(const Session& s) {
    exec::SessionInfo info = s.info;
    info.busy = s.busy || s.info.busy;
    info.age_ms = 60000;
    info.idle_ms = info.busy ? 0 : 5000;
    return info;
  }
  static exec::SessionFile FileInfo(const std::string& path, const File& file) {
    return exec::SessionFile{path, static_cast<std::int64_t>(file.data.size()), file.mime,
                             1767225600.5};
  }

  const Options options_{};  // {}: clang deletes the default constructor otherwise
  mutable std::mutex mu_;
  std::map<std::string, Session> sessions_;
  std::vector<std::string> calls_;
  std::vector<exec::RunRequest> runs_;
  std::optional<exec::SessionCreateRequest> last_create_;
  std::optional<Error> fail_next_;
  unsigned long long minted_ = 0;
};

}  // namespace sandbox::testing
