#include "sandbox/mcp/request_meta.h"

#include "sandbox/mcp/protocol_version.h"

namespace sandbox::mcp {
namespace {

using json = nlohmann::json;
namespace rpc_code = jsonrpc::rpc_code;

RpcFailure InvalidMeta(std::string message) {
  return RpcFailure{{rpc_code::kInvalidParams, std::move(message)}, nullptr};
}

}  // namespace

bool RequestMeta::HasCapability(std::string_view name) const {
  auto it = client_capabilities.find(name);
  return it != client_capabilities.end() && it->is_object();
}

bool RequestMeta::HasExtension(std::string_view id) const {
  auto extensions = client_capabilities.find("extensions");
  if (extensions == client_capabilities.end() || !extensions->is_object()) return false;
  auto it = extensions->find(id);
  return it != extensions->end() && it->is_object();
}

bool RequestMeta::HasFormElicitation() const {
  if (!HasCapability("elicitation")) return false;
  const json& elicitation = client_capabilities.at("elicitation");
  return elicitation.empty() || elicitation.contains("form");
}

std::variant<RequestMeta, RpcFailure> ParseRequestMeta(const json& params) {
  if (!params.is_object()) {
    return InvalidMeta("Invalid params: params._meta is required in protocol version " +
                       std::string(kModernProtocolVersion));
  }
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) {
    return InvalidMeta("Invalid params: params._meta is required (an object) in protocol version " +
                       std::string(kModernProtocolVersion));
  }
  RequestMeta out;
  auto version = meta->find(meta_key::kProtocolVersion);
  if (version == meta->end() || !version->is_string()) {
    return InvalidMeta(std::string("Invalid params: _meta[\"") + meta_key::kProtocolVersion +
                       "\"] is required (a string)");
  }
  out.protocol_version = version->get<std::string>();
  auto capabilities = meta->find(meta_key::kClientCapabilities);
  if (capabilities == meta->end() || !capabilities->is_object()) {
    return InvalidMeta(std::string("Invalid params: _meta[\"") + meta_key::kClientCapabilities +
                       "\"] is required (an object; {} declares none)");
  }
  out.client_capabilities = *capabilities;
  if (auto info = meta->find(meta_key::kClientInfo); info != meta->end() && !info->is_null()) {
    if (!info->is_object()) {
      return InvalidMeta(std::string("Invalid params: _meta[\"") + meta_key::kClientInfo +
                         "\"] must be an object");
    }
    out.client_info = *info;
  }
  if (auto level = meta->find(meta_key::kLogLevel); level != meta->end() && !level->is_null()) {
    auto parsed = level->is_string() ? ParseLogLevel(level->get<std::string>()) : std::nullopt;
    if (!parsed) {
      return InvalidMeta(std::string("Invalid params: _meta[\"") + meta_key::kLogLevel +
                         "\"] must be one of " + std::string(LogLevelNames()));
    }
    out.log_level = parsed;
  }
  if (!IsModernProtocolVersion(out.protocol_version)) {
    return RpcFailure{{rpc_code::kUnsupportedProtocolVersion,
                       "Unsupported protocol version: " + out.protocol_version +
                           (IsSupportedProtocolVersion(out.protocol_version)
                                ? " is spoken after initialize, not per request"
                                : "")},
                      UnsupportedVersionData(out.protocol_version)};
  }
  return out;
}

std::optional<std::string> MetaProtocolVersion(const json& message) {
  if (!message.is_object()) return std::nullopt;
  auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return std::nullopt;
  auto meta = params->find("_meta");
  if (meta == params->end() || !meta->is_object()) return std::nullopt;
  auto version = meta->find(meta_key::kProtocolVersion);
  if (version == meta->end() || !version->is_string()) return std::nullopt;
  return version->get<std::string>();
}

json UnsupportedVersionData(std::string_view requested) {
  json supported = json::array();
  for (auto v : AllProtocolVersions()) supported.push_back(std::string(v));
  return {{"supported", std::move(supported)}, {"requested", std::string(requested)}};
}

}  // namespace sandbox::mcp
