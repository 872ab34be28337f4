// What the proxy says on the wire itself: its refusals as short text responses a person can
// read in a failed pip or curl run, and the request head it sends upstream for a plain HTTP
// request (its own serialization of the parsed head, never the client's bytes).
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "sandbox/http1/request_head.h"

namespace sandbox::egress {

// Every body starts with it, so a refusal is recognizable as the proxy's in any client's
// output.
inline constexpr std::string_view kAnswerPrefix = "sandbox-mcp egress: ";

// A complete response with "Connection: close": `status`, and a text body of kAnswerPrefix,
// `message` and a newline.
std::string TextResponse(int status, std::string_view message);

// The 403 body's message for a policy refusal:
// refused by the network policy of pool "data": evil.com:443 is not in the allowlist
std::string PolicyRefusal(std::string_view pool, std::string_view reason);

// The origin-form request for the upstream: the method, the target's path and the client's
// version; Host set to the target's authority; hop-by-hop headers (Connection and what it
// names, Keep-Alive, TE, Trailer, Upgrade), Proxy-* headers and the client's Host and
// Content-Length dropped; the parsed Content-Length and "Connection: close" added.
// `head` must be a proxy-form request (head.proxy set) other than CONNECT.
std::string UpstreamRequestHead(const http::RequestHead& head);

}  // namespace sandbox::egress
