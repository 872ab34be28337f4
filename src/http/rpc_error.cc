#include "sandbox/http/rpc_error.h"

#include <httplib.h>

#include "sandbox/mcp/json_rpc.h"

namespace sandbox::http {

void SendRpcError(httplib::Response& res, int status, int code, const std::string& message,
                  const nlohmann::json& id, const nlohmann::json& data) {
  res.status = status;
  const mcp::RpcError error{code, message};
  res.set_content(
      mcp::DumpJson(data.is_null() ? mcp::MakeError(id, error) : mcp::MakeError(id, error, data)),
      "application/json");
}

}  // namespace sandbox::http
