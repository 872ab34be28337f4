// ResourceProvider: one source of MCP resources (resources/list, resources/templates/list,
// resources/read), apart from any transport; ResourceRegistry: the server's providers, asked in
// registration order. The dispatcher announces the `resources` capability only when the registry
// has a provider. No subscriptions: resources change only when code runs, and a Streamable HTTP
// client has no stream to receive updates on outside a request (GET /mcp is 405).
//
// Every call names the principal of the MCP session, so a provider shows each client only what
// belongs to it.
//
// Thread-safety: providers are called from many threads at once; the registry is filled during
// start-up, then read-only.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/core/result.h"

namespace sandbox::mcp {

struct ResourcePage {
  // MCP Resource objects: {uri, name, title?, description?, mimeType?, size?, annotations?}.
  std::vector<nlohmann::json> resources;
  std::string next_cursor;  // "" on the last page
};

class ResourceProvider {
 public:
  virtual ~ResourceProvider() = default;
  // One page of what `principal` may read. `cursor` is "" for the first page, otherwise a
  // next_cursor this provider returned; kInvalidArgument for any other.
  virtual Result<ResourcePage> List(const std::string& principal, const std::string& cursor) = 0;
  // MCP ResourceTemplate objects: {uriTemplate, name, title?, description?, mimeType?}.
  virtual std::vector<nlohmann::json> Templates() const = 0;
  // Whether `uri` is in this provider's namespace (the registry reads it from the first that is).
  virtual bool Owns(std::string_view uri) const = 0;
  // The `contents` array of a resources/read result: [{uri, mimeType?, text | blob}].
  // kNotFound -> -32002 "Resource not found" (with the uri in data), kInvalidArgument and kLimit
  // -> -32602, anything else -> -32603 with the message.
  virtual Result<nlohmann::json> Read(const std::string& principal, const std::string& uri) = 0;
};

class ResourceRegistry {
 public:
  void Add(std::unique_ptr<ResourceProvider> provider);
  bool empty() const { return providers_.empty(); }

  // The result of resources/list: {resources, nextCursor?}. Pages run through the providers in
  // order; the cursor ("<provider index>.<provider cursor>") is opaque to clients.
  Result<nlohmann::json> List(const std::string& principal, const std::string& cursor) const;
  // The result of resources/templates/list: {resourceTemplates}.
  nlohmann::json Templates() const;
  // The result of resources/read: {contents}. kNotFound when no provider owns `uri`.
  Result<nlohmann::json> Read(const std::string& principal, const std::string& uri) const;

 private:
  std::vector<std::unique_ptr<ResourceProvider>> providers_;
};

// A resource's `contents` entry: `text` when the bytes are UTF-8 text (a text MIME type, or no
// specific type and no NUL byte), base64 `blob` otherwise.
nlohmann::json ResourceContents(std::string_view uri, std::string_view mime_type,
                                std::string_view data);

// Whether ResourceContents would send `data` as text: valid UTF-8 of a text type (or of no
// telling type, without NUL) whose JSON escaping is at most twice its size (+ 64 bytes).
bool IsTextContent(std::string_view mime_type, std::string_view data);

}  // namespace sandbox::mcp
