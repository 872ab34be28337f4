#include "sandbox/core/replica_id.h"

namespace sandbox {

bool IsReplicaName(std::string_view name) {
  if (name.empty() || name.size() > kMaxReplicaNameBytes) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

std::string ReplicaId(std::string_view replica, std::string_view random) {
  if (replica.empty()) return std::string(random);
  std::string id;
  id.reserve(replica.size() + 1 + random.size());
  id.append(replica).append("-").append(random);
  return id;
}

}  // namespace sandbox
