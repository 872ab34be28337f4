// The JSON-RPC error answers the dispatcher's files share (dispatcher.cc and the files of the
// two protocol eras, dispatcher_2025_11_25.cc and dispatcher_2026_07_28.cc); private to
// sandbox_mcp.
// Thread-safety: stateless; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::mcp::detail {

inline nlohmann::json ErrorResponse(const nlohmann::json& id, int code, std::string message) {
  return jsonrpc::MakeError(id, jsonrpc::RpcError{code, std::move(message)});
}

inline nlohmann::json InvalidParams(const nlohmann::json& id, std::string message) {
  return ErrorResponse(id, jsonrpc::rpc_code::kInvalidParams, std::move(message));
}

}  // namespace sandbox::mcp::detail
