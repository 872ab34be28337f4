#include "sandbox/core/byte_budget.h"

#include <algorithm>
#include <utility>

#include "sandbox/core/human_bytes.h"

namespace sandbox {

ByteBudget::Reservation::Reservation(Reservation&& other) noexcept
    : state_(std::move(other.state_)), capacity_(other.capacity_), bytes_(other.bytes_) {
  other.bytes_ = 0;
}

ByteBudget::Reservation& ByteBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    state_ = std::move(other.state_);
    capacity_ = other.capacity_;
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

bool ByteBudget::Reservation::TryGrow(std::int64_t more) {
  if (more <= 0) return true;
  if (!state_) return false;
  std::lock_guard lock(state_->mu);
  if (state_->in_use > capacity_ - more) {
    ++state_->refused;
    return false;
  }
  state_->in_use += more;
  state_->peak = std::max(state_->peak, state_->in_use);
  bytes_ += more;
  return true;
}

void ByteBudget::Reservation::Shrink(std::int64_t less) {
  less = std::min(less, bytes_);
  if (less <= 0 || !state_) return;
  {
    std::lock_guard lock(state_->mu);
    state_->in_use -= less;
  }
  bytes_ -= less;
  state_->freed.notify_all();
}

void ByteBudget::Reservation::Release() { Shrink(bytes_); }

bool ByteBudget::FitsLocked(std::int64_t bytes) const {
  return state_->in_use <= capacity_ - bytes;
}

std::optional<ByteBudget::Reservation> ByteBudget::TryReserve(std::int64_t bytes) {
  return Reserve(bytes, std::chrono::milliseconds(0));
}

std::optional<ByteBudget::Reservation> ByteBudget::Reserve(std::int64_t bytes,
                                                           std::chrono::milliseconds wait) {
  bytes = std::max<std::int64_t>(bytes, 0);
  std::unique_lock lock(state_->mu);
  const bool fits =
      bytes <= capacity_ &&
      (FitsLocked(bytes) || state_->freed.wait_for(lock, wait, [&] { return FitsLocked(bytes); }));
  if (!fits) {
    ++state_->refused;
    return std::nullopt;
  }
  state_->in_use += bytes;
  state_->peak = std::max(state_->peak, state_->in_use);
  return Reservation(state_, capacity_, bytes);
}

std::int64_t ByteBudget::in_use() const {
  std::lock_guard lock(state_->mu);
  return state_->in_use;
}

std::int64_t ByteBudget::peak() const {
  std::lock_guard lock(state_->mu);
  return state_->peak;
}

std::int64_t ByteBudget::refused() const {
  std::lock_guard lock(state_->mu);
  return state_->refused;
}

std::string ByteBudget::RefusalMessage(std::int64_t bytes, std::string_view what) const {
  if (bytes > capacity_) {
    return std::string(what) + " needs " + HumanBytes(bytes) + ", more than the " +
           HumanBytes(capacity_) + " the server holds for all clients at once (" + key_ + ")";
  }
  return std::string(what) + " needs " + HumanBytes(bytes) + " but the server holds " +
         HumanBytes(in_use()) + " of its " + HumanBytes(capacity_) + " for clients now (" + key_ +
         "); retry later";
}

}  // namespace sandbox
