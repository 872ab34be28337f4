#include "sandbox/http/run_registry.h"

namespace sandbox::http {

std::shared_ptr<exec::CancelToken> RunRegistry::Add() {
  std::lock_guard lock(mu_);
  if (shutting_down_) return nullptr;
  auto token = std::make_shared<exec::CancelToken>();
  active_.insert(token);
  return token;
}

void RunRegistry::Remove(const std::shared_ptr<exec::CancelToken>& token) {
  std::lock_guard lock(mu_);
  active_.erase(token);
}

void RunRegistry::Shutdown() {
  std::set<std::shared_ptr<exec::CancelToken>> tokens;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    tokens = active_;
  }
  // Outside the lock: a token's callbacks may end runs that remove themselves.
  for (const auto& token : tokens) token->Cancel();
}

std::size_t RunRegistry::size() const {
  std::lock_guard lock(mu_);
  return active_.size();
}

}  // namespace sandbox::http
