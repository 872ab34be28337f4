#include "policy_table.h"

#include <utility>

namespace sandbox::egress {

void PolicyTable::Set(const config::IpAddress& source, PoolPolicy entry) {
  auto shared = std::make_shared<const PoolPolicy>(std::move(entry));
  const std::lock_guard lock(mutex_);
  entries_[source.ToString()] = std::move(shared);
}

bool PolicyTable::Remove(const config::IpAddress& source) {
  const std::lock_guard lock(mutex_);
  return entries_.erase(source.ToString()) > 0;
}

void PolicyTable::Clear() {
  const std::lock_guard lock(mutex_);
  entries_.clear();
}

std::shared_ptr<const PoolPolicy> PolicyTable::Find(const config::IpAddress& source) const {
  const std::lock_guard lock(mutex_);
  auto it = entries_.find(source.ToString());
  return it == entries_.end() ? nullptr : it->second;
}

std::size_t PolicyTable::size() const {
  const std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace sandbox::egress
