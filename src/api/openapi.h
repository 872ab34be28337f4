// The OpenAPI 3.1 description served at GET /openapi.json: /eval, /v1/execute (JSON and
// Server-Sent Events), /v1/sessions and its files, /healthz and /openapi.json itself, with a bearer
// security scheme (the server asks for it only when a token is configured). Thread-safety:
// stateless; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

namespace sandbox::api {

struct ApiOptions;

nlohmann::json OpenApiDocument(const ApiOptions& options);

}  // namespace sandbox::api
