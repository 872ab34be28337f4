// POST /v1/execute: the request's meaning and the answer's shape, as pure functions (the HTTP
// handling, JSON or Server-Sent Events, is in http_api.h).
//
// Request {code, timeout_s?, memory_bytes?, output_bytes?, files?: [{path, content_base64}],
// pool?, session_id?} - the arguments of the MCP tool run_python plus `pool`. Unknown fields are
// refused. With `session_id` the code runs in that session (memory_bytes is then refused: a
// session's memory is fixed at creation).
//
// Result (JSON mode's body, and the data of the SSE `result` event): the complete shape of the
// run result (exec::RunResultJson, sandbox/exec/run_result_json.h): the fields of run_python's
// structuredContent with the image and file bytes inline, and every field present (null when
// absent).
//
// Thread-safety: stateless functions; StreamEvents is used by one run (the engine calls
// observers serially).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/api/api_error.h"
#include "sandbox/exec/run_types.h"
#include "sandbox/exec/session_service.h"

namespace sandbox::api {

// Parses a /v1/execute body into `request` and `session_id` ("" without one); a refusal (400,
// or 413 for code longer than `max_code_bytes`) otherwise.
std::optional<ApiError> ParseExecuteRequest(const nlohmann::json& body, std::size_t max_code_bytes,
                                            exec::RunRequest& request, std::string& session_id);

// POST /v1/sessions: {pool?, timeout_s?, memory_bytes?, output_bytes?}; an empty body (null) is
// {}. Unknown fields are refused.
std::optional<ApiError> ParseSessionCreateRequest(const nlohmann::json& body,
                                                  exec::SessionCreateRequest& request);

// Whether `id` can be a session id (1-128 of [A-Za-z0-9_-]); anything else is never found.
bool IsSessionIdSyntax(std::string_view id);

// {"error": message, "field": field-or-null}
nlohmann::json ErrorBody(const ApiError& error);

// "event: <name>\ndata: <data>\n\n" (http::FormatSseEvent; data is one line: compact JSON has
// no newlines).
std::string SseEvent(std::string_view name, const nlohmann::json& data);

}  // namespace sandbox::api
