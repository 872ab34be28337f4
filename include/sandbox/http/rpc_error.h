// A refusal whose body is a JSON-RPC error: what MCP clients parse, so the guards in front of the
// MCP routes and the MCP transports (sandbox_transport) answer with it.
// Thread-safety: a stateless function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace httplib {
struct Response;
}  // namespace httplib

namespace sandbox::http {

// `status` with a JSON-RPC error body: `code` and `message`, the request's id when the body was
// read that far (null otherwise) and the error's data when it has one.
void SendRpcError(httplib::Response& res, int status, int code, const std::string& message,
                  const nlohmann::json& id = nullptr, const nlohmann::json& data = nullptr);

}  // namespace sandbox::http
