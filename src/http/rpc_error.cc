#include "sandbox/http/rpc_error.h"

#include <httplib.h>

#include "sandbox/jsonrpc/json_rpc.h"

namespace sandbox::http {

void SendRpcError(httplib::Response& res, int status, int code, const std::string& message,
                  const nlohmann::json& id, const nlohmann::json& data) {
  res.status = status;
  const jsonrpc::RpcError error{code, message};
  res.set_content(jsonrpc::DumpJson(data.is_null() ? jsonrpc::MakeError(id, error)
                                                   : jsonrpc::MakeError(id, error, data)),
                  "application/json");
}

}  // namespace sandbox::http
