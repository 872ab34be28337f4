#include "sandbox/core/slot_limiter.h"

namespace sandbox {

SlotLimiter::Slot::~Slot() {
  std::lock_guard lock(state_->mu);
  --state_->in_use;
  if (key_.empty()) return;
  auto it = state_->per_key.find(key_);
  if (it != state_->per_key.end() && --it->second == 0) state_->per_key.erase(it);
}

std::shared_ptr<SlotLimiter::Slot> SlotLimiter::TryAcquire(std::string_view key, Refusal* why) {
  std::lock_guard lock(state_->mu);
  auto refuse = [why](Refusal reason) -> std::shared_ptr<Slot> {
    if (why != nullptr) *why = reason;
    return nullptr;
  };
  if (state_->in_use >= capacity_) return refuse(Refusal::kCapacity);
  if (!key.empty()) {
    auto it = state_->per_key.find(key);
    const std::size_t held = it == state_->per_key.end() ? 0 : it->second;
    if (per_key_capacity_ > 0 && held >= per_key_capacity_) return refuse(Refusal::kPerKey);
    if (it == state_->per_key.end()) {
      state_->per_key.emplace(std::string(key), 1);
    } else {
      ++it->second;
    }
  }
  ++state_->in_use;
  if (why != nullptr) *why = Refusal::kNone;
  return std::shared_ptr<Slot>(new Slot(state_, std::string(key)));
}

std::size_t SlotLimiter::in_use() const {
  std::lock_guard lock(state_->mu);
  return state_->in_use;
}

std::size_t SlotLimiter::in_use(std::string_view key) const {
  std::lock_guard lock(state_->mu);
  auto it = state_->per_key.find(key);
  return it == state_->per_key.end() ? 0 : it->second;
}

std::string SlotLimiter::RefusalMessage(Refusal why, std::string_view what) const {
  if (why == Refusal::kPerKey) {
    return "this token already holds " + std::to_string(per_key_capacity_) + " " +
           std::string(what) + ", the most one token may hold at once (" + names_.per_key +
           "); retry later";
  }
  return std::to_string(capacity_) + " " + std::string(what) +
         " are open, the most this server serves at once (" + names_.capacity + "); retry later";
}

}  // namespace sandbox
