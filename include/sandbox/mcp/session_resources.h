// SessionResourceProvider: the files of the caller's sandbox sessions as MCP resources, at
// sandbox://sessions/<session_id>/files/<path> (src/mcp/session_uri.h).
//
// resources/list pages through the principal's sessions (oldest first) and their files (by
// path), `page_size` at a time; a session busy running code is left out of the listing (listing
// its files would wait for the run). resources/read fetches the file through
// SessionService::GetFile: `text` for UTF-8 text, base64 `blob` otherwise. An unknown,
// expired or foreign session, or a missing file, is "Resource not found" (-32002).
// Thread-safety: safe from many threads (SessionService is).
#pragma once

#include <cstddef>

#include "sandbox/exec/session_service.h"
#include "sandbox/mcp/resource_provider.h"

namespace sandbox::mcp {

struct SessionResourceOptions {
  std::size_t page_size = 100;
};

class SessionResourceProvider final : public ResourceProvider {
 public:
  explicit SessionResourceProvider(exec::SessionService& sessions,
                                   SessionResourceOptions options = {})
      : sessions_(sessions), options_(options) {}

  Result<ResourcePage> List(const std::string& principal, const std::string& cursor) override;
  std::vector<nlohmann::json> Templates() const override;
  bool Owns(std::string_view uri) const override;
  Result<nlohmann::json> Read(const std::string& principal, const std::string& uri) override;

 private:
  exec::SessionService& sessions_;
  const SessionResourceOptions options_;
};

}  // namespace sandbox::mcp
