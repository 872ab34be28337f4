#include "sandbox/transport/stdio_transport.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sandbox/jsonrpc/json_rpc.h"
#include "sandbox/mcp/request_meta.h"

namespace sandbox::transport {
namespace {

using json = nlohmann::json;
using jsonrpc::DumpJson;
using jsonrpc::MakeError;
using jsonrpc::ParseJsonText;
using jsonrpc::RpcParseError;
namespace rpc_code = jsonrpc::rpc_code;

// Writes stdout lines; serialized by the transport's write mutex.
class StdoutOutbound final : public mcp::Outbound {
 public:
  explicit StdoutOutbound(std::function<void(const json&)> write) : write_(std::move(write)) {}
  void Send(const json& message) override { write_(message); }

 private:
  std::function<void(const json&)> write_;
};

// Before initialize, a message that names a 2026-07-28 version in _meta (any version: the
// dispatcher refuses the ones it does not serve per request) or asks server/discover, and a
// cancellation (which can only be for such a request), belong to the stateless era.
bool IsModernMessage(const mcp::Session& legacy, const json& message) {
  if (legacy.initialized() || !message.is_object()) return false;
  if (mcp::MetaProtocolVersion(message)) return true;
  auto method = message.find("method");
  return method != message.end() &&
         (*method == "server/discover" || *method == "notifications/cancelled");
}

}  // namespace

StdioTransport::StdioTransport(mcp::Dispatcher& dispatcher, StdioOptions options,
                               std::shared_ptr<spdlog::logger> logger)
    : dispatcher_(dispatcher),
      options_(options),
      logger_(std::move(logger)),
      tasks_(options.max_concurrent_calls) {}

void StdioTransport::Write(const json& message) {
  std::string line = DumpJson(message);
  line += '\n';
  std::lock_guard lock(write_mu_);
  std::size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(out_fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      logger_->warn("stdio: cannot write to the client ({}); dropping a message", errno);
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

void StdioTransport::HandleLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  if (line.empty()) return;
  auto parsed = ParseJsonText(line);
  StdoutOutbound out([this](const json& m) { Write(m); });
  if (!parsed.ok()) {
    Write(MakeError(nullptr, {rpc_code::kParseError, RpcParseError(parsed.error())}));
    return;
  }
  json value = std::move(parsed).value();
  const bool modern = IsModernMessage(session_, value);
  if (!mcp::Dispatcher::IsLongRunning(value)) {
    std::optional<json> response;
    if (modern) {
      response = dispatcher_.HandleModern(modern_, value, out);
    } else {
      response = value.is_array() ? dispatcher_.HandleBatch(session_, value, out)
                                  : dispatcher_.Handle(session_, value, out);
    }
    if (response) Write(*response);
    return;
  }
  const json id = value["id"];
  bool spawned = tasks_.Spawn([this, modern, value = std::move(value)] {
    StdoutOutbound task_out([this](const json& m) { Write(m); });
    auto response = modern ? dispatcher_.HandleModern(modern_, value, task_out)
                           : dispatcher_.Handle(session_, value, task_out);
    if (response) Write(*response);
  });
  if (!spawned) {
    Write(MakeError(
        id, {rpc_code::kServerError, "server busy: too many tool calls in flight; retry later"}));
  }
}

void StdioTransport::Run(int in_fd, int out_fd) {
  out_fd_ = out_fd;
  std::string buffer;
  bool discarding = false;  // inside a line that exceeded the size limit
  char chunk[65536];
  while (!stop_.load()) {
    pollfd pfd{in_fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, 200);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t n = ::read(in_fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    if (n == 0) break;  // end of input
    std::string_view data(chunk, static_cast<std::size_t>(n));
    while (!data.empty()) {
      auto newline = data.find('\n');
      std::string_view piece = data.substr(0, newline);
      if (!discarding) buffer.append(piece);
      if (buffer.size() > options_.max_message_bytes) {
        if (!discarding) {
          Write(MakeError(nullptr, {rpc_code::kInvalidRequest,
                                    "message too large: the limit is " +
                                        std::to_string(options_.max_message_bytes) + " bytes"}));
        }
        discarding = true;
        buffer.clear();
      }
      if (newline == std::string_view::npos) break;
      if (!discarding) HandleLine(buffer);
      buffer.clear();
      discarding = false;
      data.remove_prefix(newline + 1);
    }
  }
  if (!stop_.load() && !discarding && !buffer.empty()) HandleLine(buffer);
  if (stop_.load()) {
    session_.End();
    modern_.End();
  }
  tasks_.Wait();
  logger_->info("stdio: input closed, {} served", "session");
}

void StdioTransport::Stop() {
  stop_.store(true);
  session_.End();
  modern_.End();
}

}  // namespace sandbox::transport
