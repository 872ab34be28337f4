// Small pieces of HTTP every handler on the server's cpp-httplib needs (the MCP transports and
// the HTTP API alike): media types of Content-Type and Accept, and a JSON answer.
// Thread-safety: stateless functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sandbox/core/byte_budget.h"
#include "sandbox/http1/text.h"  // Lower, Trim: the callers of these helpers use them too

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace sandbox::http {

// The media type of a Content-Type value (or of one Accept range), lower-cased, without
// parameters.
std::string MediaType(std::string_view value);

// Whether an Accept header allows `type` ("application/json"), wildcards included.
bool Accepts(std::string_view accept, std::string_view type);

// Whether an Accept header lists `type` itself (no wildcard) with a q above 0: a client that
// asks for this representation in particular (text/event-stream for a stream).
bool Lists(std::string_view accept, std::string_view type);

// Whether a request's body is JSON: Content-Type application/json, any application/...+json,
// or no Content-Type at all.
bool IsJsonBody(const httplib::Request& req);

// `status` with `body` as application/json (invalid UTF-8 in strings replaced, never thrown).
void SendJson(httplib::Response& res, int status, const nlohmann::json& body);

// The same for a large answer built once: `body` is serialized and then freed, and the text is
// written from where it is (no copy into the response); `held` (the answer's reservation of
// the in-flight budget) shrinks to the text's size and is given back once the response is
// written or the connection is gone.
void SendJsonHeld(httplib::Response& res, int status, nlohmann::json body,
                  ByteBudget::Reservation held);

}  // namespace sandbox::http
