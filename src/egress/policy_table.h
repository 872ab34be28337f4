// Which pool's network policy decides a connection, by the address it comes from: the server
// puts each sandbox's address in the table when it lends the sandbox out (control.h), so a
// sandbox cannot choose its policy, only the network it was given.
// Thread-safety: every method may be called from any thread (the control reader writes, the
// proxy's event loop reads); an entry found stays valid while the caller holds it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "injection.h"
#include "sandbox/config/network_policy.h"

namespace sandbox::egress {

struct PoolPolicy {
  std::string pool;  // the pool's name, for refusals and audit lines
  config::NetworkPolicy policy;
  std::vector<Injection> inject;  // credentials per host of the policy (injection.h)
};

class PolicyTable {
 public:
  // Replaces what `source` had: new connections from it are decided by `entry` at once.
  void Set(const config::IpAddress& source, PoolPolicy entry);
  // Whether `source` had an entry.
  bool Remove(const config::IpAddress& source);
  void Clear();
  // The entry of `source`, or null for an address the server did not name.
  std::shared_ptr<const PoolPolicy> Find(const config::IpAddress& source) const;
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const PoolPolicy>> entries_;  // by IpAddress::ToString
};

}  // namespace sandbox::egress
