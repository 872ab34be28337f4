// Ids that name the server replica that minted them (server.replica; docs/multi-node.md). Behind
// a balancer of several identical replicas, every request that names an MCP transport session, a
// sandbox session or a task must reach the replica that holds it; the balancer
// (deploy/balancer/haproxy.cfg) finds that replica in the id itself: the text before its first
// '-'. This file is the one place that spells the rule; every minting point goes through it.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

inline constexpr std::size_t kMaxReplicaNameBytes = 8;

// 1 to 8 of [a-z0-9]: no '-' (it ends the prefix) and nothing a header, a path or a URI would
// have to escape, so the balancer reads the prefix the same way wherever the id travels.
bool IsReplicaName(std::string_view name);

// The id `random` as replica `replica` mints it: "<replica>-<random>"; `random` unchanged when
// `replica` is empty (a server on its own).
std::string ReplicaId(std::string_view replica, std::string_view random);

}  // namespace sandbox
