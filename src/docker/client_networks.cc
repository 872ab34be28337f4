// The network calls of Client (client.h): the internal networks of pools with an egress policy.
#include "sandbox/docker/client.h"

namespace sandbox::docker {

Result<std::string> Client::CreateNetwork(const nlohmann::json& body,
                                          const CallOptions& call) const {
  const std::string name = body.value("Name", "");
  auto j =
      CallJson("POST", Versioned("/networks/create"), body.dump(), "create network " + name, call);
  if (!j.ok()) {
    // Docker answers an overlapping subnet with 400 ("Pool overlaps with other one on this
    // address space") and a taken bridge name with 500: both mean "try another".
    const std::string& text = j.error().message();
    if (text.find("overlaps") != std::string::npos ||
        text.find("already exists") != std::string::npos ||
        text.find("address already in use") != std::string::npos) {
      return Error(ErrorCode::kConflict, text);
    }
    return j.error();
  }
  if (!j->is_object() || !(*j)["Id"].is_string()) {
    return Error(ErrorCode::kProtocol, "create network " + name + ": the answer has no Id");
  }
  return (*j)["Id"].get<std::string>();
}

Status Client::RemoveNetwork(std::string_view name, const CallOptions& call) const {
  auto resp = Call("DELETE", Versioned("/networks/" + PathSegment(name)), "",
                   "remove network " + std::string(name), call);
  if (!resp.ok()) return resp.error();
  return OkStatus();
}

Result<NetworkSummary> Client::InspectNetwork(std::string_view name,
                                              const CallOptions& call) const {
  auto j = CallJson("GET", Versioned("/networks/" + PathSegment(name)), "",
                    "inspect network " + std::string(name), call);
  if (!j.ok()) return j.error();
  return ParseNetwork(*j);
}

Result<std::vector<NetworkSummary>> Client::ListNetworks(const Filters& filters,
                                                         const CallOptions& call) const {
  auto j = CallJson("GET", Versioned("/networks" + Query().AddFilters(filters).Encode()), "",
                    "list networks", call);
  if (!j.ok()) return j.error();
  return ParseNetworkList(*j);
}

Status Client::ConnectNetwork(std::string_view network, std::string_view container,
                              std::string_view ipv4, const CallOptions& call) const {
  nlohmann::json body = {{"Container", std::string(container)}};
  if (!ipv4.empty()) {
    body["EndpointConfig"] = {{"IPAMConfig", {{"IPv4Address", std::string(ipv4)}}}};
  }
  auto resp = Call(
      "POST", Versioned("/networks/" + PathSegment(network) + "/connect"), body.dump(),
      "connect container " + std::string(container) + " to network " + std::string(network), call);
  if (!resp.ok()) return resp.error();
  return OkStatus();
}

}  // namespace sandbox::docker
