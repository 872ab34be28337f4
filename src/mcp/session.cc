#include "sandbox/mcp/session.h"

#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::mcp {

using jsonrpc::IdKey;

bool Session::initialized() const {
  std::lock_guard lock(mu_);
  return initialized_;
}

std::string Session::protocol_version() const {
  std::lock_guard lock(mu_);
  return version_;
}

void Session::MarkInitialized(std::string version, nlohmann::json client_info) {
  std::lock_guard lock(mu_);
  initialized_ = true;
  version_ = std::move(version);
  client_info_ = std::move(client_info);
}

void Session::MarkClientReady() {
  std::lock_guard lock(mu_);
  client_ready_ = true;
}

bool Session::client_ready() const {
  std::lock_guard lock(mu_);
  return client_ready_;
}

nlohmann::json Session::client_info() const {
  std::lock_guard lock(mu_);
  return client_info_;
}

std::optional<LogLevel> Session::log_level() const {
  std::lock_guard lock(mu_);
  return log_level_;
}

void Session::SetLogLevel(LogLevel level) {
  std::lock_guard lock(mu_);
  log_level_ = level;
}

std::shared_ptr<exec::CancelToken> Session::BeginRequest(const nlohmann::json& id) {
  std::lock_guard lock(mu_);
  if (ended_) return nullptr;
  auto [it, inserted] = in_flight_.try_emplace(IdKey(id));
  if (!inserted) return nullptr;
  it->second.token = std::make_shared<exec::CancelToken>();
  return it->second.token;
}

bool Session::EndRequest(const nlohmann::json& id) {
  std::lock_guard lock(mu_);
  auto it = in_flight_.find(IdKey(id));
  if (it == in_flight_.end()) return false;
  bool cancelled = it->second.cancelled;
  in_flight_.erase(it);
  return cancelled;
}

bool Session::CancelRequest(const nlohmann::json& id) {
  std::shared_ptr<exec::CancelToken> token;
  {
    std::lock_guard lock(mu_);
    auto it = in_flight_.find(IdKey(id));
    if (it == in_flight_.end()) return false;
    it->second.cancelled = true;
    token = it->second.token;
  }
  token->Cancel();  // outside the lock: callbacks may call back into the session
  return true;
}

void Session::End() {
  std::vector<std::shared_ptr<exec::CancelToken>> tokens;
  {
    std::lock_guard lock(mu_);
    ended_ = true;
    for (auto& [key, entry] : in_flight_) {
      entry.cancelled = true;
      tokens.push_back(entry.token);
    }
  }
  for (auto& token : tokens) token->Cancel();
}

bool Session::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

std::size_t Session::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_.size();
}

}  // namespace sandbox::mcp
